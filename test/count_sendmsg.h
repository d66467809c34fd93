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
}

// Counts, then does what libc's sendmsg does.
extern "C" ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	test_count::sendmsg_calls.fetch_add(1, std::memory_order_relaxed);
	test_count::sendmsg_buffers.fetch_add(static_cast<int>(msg->msg_iovlen),
					      std::memory_order_relaxed);
	return syscall(SYS_sendmsg, fd, msg, flags);
}
