// Counts a test program's sendmsg calls: the program links the library statically, so the
// providers' calls come to this definition instead of libc's. Include it in exactly one file
// of a program (it defines the function); read and reset test_count::sendmsg_calls. The count
// is atomic because a provider's progress thread may send while the test thread does.
#pragma once

#include <atomic>

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace test_count {
inline std::atomic<int> sendmsg_calls{0};
inline std::atomic<int> sendmsg_buffers{0}; // msg_iovlen, added up
// When not 0, each call sends at most this many bytes, as a socket with little room left
// would take (to test partial sends).
inline std::atomic<size_t> sendmsg_cap{0};
}

// Counts, then does what libc's sendmsg does. A second file of the same program that reads
// the counts defines COUNT_SENDMSG_COUNTS_ONLY before including this.
#ifndef COUNT_SENDMSG_COUNTS_ONLY
extern "C" ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	test_count::sendmsg_calls.fetch_add(1, std::memory_order_relaxed);
	test_count::sendmsg_buffers.fetch_add(static_cast<int>(msg->msg_iovlen),
					      std::memory_order_relaxed);
	size_t cap = test_count::sendmsg_cap.load(std::memory_order_relaxed);
	if (!cap || !msg || msg->msg_iovlen == 0)
		return syscall(SYS_sendmsg, fd, msg, flags);
	struct iovec iov[64];
	struct msghdr m = *msg;
	size_t n = 0;
	for (size_t i = 0; i < msg->msg_iovlen && i < 64 && cap; i++, n++) {
		iov[i] = msg->msg_iov[i];
		if (iov[i].iov_len > cap)
			iov[i].iov_len = cap;
		cap -= iov[i].iov_len;
	}
	m.msg_iov = iov;
	m.msg_iovlen = n;
	return syscall(SYS_sendmsg, fd, &m, flags);
}
#endif
