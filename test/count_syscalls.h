// Counts the system calls a test program makes through the libc functions our providers use
// to wait, ring, drain and move bytes (poll, epoll_wait, read, write, recv*, send*): the
// program's own definitions come before libc's for the library too (a static link, or the
// shared library's undefined references, which resolve to the executable first). Include it
// in exactly one file of a program (it defines the functions) that includes no other
// counter (test/count_sendmsg.h). Read test_count::syscalls(), test_count::probes() (the
// epoll_wait calls on epoll fds a sleeping poll() watched: rxm's blocked readers watch their
// cores' engines that way); voluntary context switches (the sleeps) come from getrusage.
#pragma once

#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

namespace test_count {

inline std::atomic<long> syscall_count{0};
// epoll_wait calls on an epoll fd that a sleeper watches (one poll() was given with a
// timeout): the probes of progress engines that a blocked reader sleeps on.
inline std::atomic<long> watched_epoll_waits{0};
inline constexpr int kWatchedFds = 4096;
inline std::atomic<bool> watched[kWatchedFds];

inline long syscalls() { return syscall_count.load(); }
inline long probes() { return watched_epoll_waits.load(); }

// Times this process went to sleep (voluntary context switches) so far.
inline long sleeps()
{
	rusage usage{};
	getrusage(RUSAGE_SELF, &usage);
	return usage.ru_nvcsw;
}

inline long counted(long ret)
{
	syscall_count.fetch_add(1, std::memory_order_relaxed);
	return ret;
}

} // namespace test_count

// Each counts, then does what libc's function does (the raw system call; epoll_wait and poll
// through their p-variants, which every architecture has).
extern "C" int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
	if (epfd >= 0 && epfd < test_count::kWatchedFds &&
	    test_count::watched[epfd].load(std::memory_order_relaxed))
		test_count::watched_epoll_waits.fetch_add(1, std::memory_order_relaxed);
	return static_cast<int>(test_count::counted(
		syscall(SYS_epoll_pwait, epfd, events, max, timeout, nullptr, 8)));
}

extern "C" int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (timeout != 0)
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].fd >= 0 && fds[i].fd < test_count::kWatchedFds)
				test_count::watched[fds[i].fd].store(true, std::memory_order_relaxed);
	timespec ts{timeout / 1000, (timeout % 1000) * 1000000L};
	return static_cast<int>(test_count::counted(
		syscall(SYS_ppoll, fds, n, timeout < 0 ? nullptr : &ts, nullptr, 8)));
}

extern "C" ssize_t read(int fd, void *buf, size_t len)
{
	return test_count::counted(syscall(SYS_read, fd, buf, len));
}

extern "C" ssize_t write(int fd, const void *buf, size_t len)
{
	return test_count::counted(syscall(SYS_write, fd, buf, len));
}

extern "C" ssize_t readv(int fd, const struct iovec *iov, int n)
{
	return test_count::counted(syscall(SYS_readv, fd, iov, n));
}

extern "C" ssize_t writev(int fd, const struct iovec *iov, int n)
{
	return test_count::counted(syscall(SYS_writev, fd, iov, n));
}

extern "C" ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return test_count::counted(syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr));
}

extern "C" ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	return test_count::counted(syscall(SYS_recvmsg, fd, msg, flags));
}

extern "C" ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return test_count::counted(syscall(SYS_sendto, fd, buf, len, flags, nullptr, 0));
}

extern "C" ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return test_count::counted(syscall(SYS_sendmsg, fd, msg, flags));
}
