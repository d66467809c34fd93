/* syscount: counts the system calls a process makes through libc's wrappers, for the
 * per-message counts of PROFILE-wire.md (LD_PRELOAD; not part of the build):
 *
 *   gcc -shared -fPIC -O2 -o syscount.so fabtests/bench/syscount.c -ldl
 *   SYSCOUNT_OUT=/tmp/counts LD_PRELOAD=$PWD/syscount.so fi_msg_pingpong ...
 *
 * At exit each process appends one line per call that it made to $SYSCOUNT_OUT (stderr
 * when unset): "pid name calls ready", where ready counts the calls that returned > 0 (a
 * read that got data, a poll or epoll_wait that reported an fd), and two lines for the
 * context switches getrusage reports (voluntary: the process slept; involuntary).
 * Run a benchmark at two iteration counts and divide the difference by the messages in
 * between: setup and teardown cancel. Calls libc makes internally (its own __read inside
 * eventfd_read, the futex calls of pthread mutexes) are not seen, which is why eventfd_read
 * and eventfd_write are counted by name.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
	C_epoll_wait, C_epoll_pwait, C_poll, C_ppoll, C_read, C_write, C_readv, C_writev,
	C_recv, C_recvfrom, C_recvmsg, C_send, C_sendto, C_sendmsg, C_eventfd_read,
	C_eventfd_write, C_sched_yield, C_process_vm_readv, C_count
};

static const char *const names[C_count] = {
	"epoll_wait", "epoll_pwait", "poll", "ppoll", "read", "write", "readv", "writev",
	"recv", "recvfrom", "recvmsg", "send", "sendto", "sendmsg", "eventfd_read",
	"eventfd_write", "sched_yield", "process_vm_readv",
};

static uint64_t calls[C_count], ready[C_count];

/* Counts one call of `which` that returned `ret`. Relaxed atomics: threads may share it. */
static long note(int which, long ret)
{
	__atomic_fetch_add(&calls[which], 1, __ATOMIC_RELAXED);
	if (ret > 0)
		__atomic_fetch_add(&ready[which], 1, __ATOMIC_RELAXED);
	return ret;
}

/* The next definition of `name` (libc's), looked up once. */
#define REAL(type, name, args)                                                         \
	static type(*real) args;                                                       \
	if (!real)                                                                     \
		real = (type(*) args)dlsym(RTLD_NEXT, #name)

int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
	REAL(int, epoll_wait, (int, struct epoll_event *, int, int));
	return (int)note(C_epoll_wait, real(epfd, events, max, timeout));
}

int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout,
		const sigset_t *mask)
{
	REAL(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *));
	return (int)note(C_epoll_pwait, real(epfd, events, max, timeout, mask));
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	REAL(int, poll, (struct pollfd *, nfds_t, int));
	return (int)note(C_poll, real(fds, n, timeout));
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask)
{
	REAL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *));
	return (int)note(C_ppoll, real(fds, n, timeout, mask));
}

ssize_t read(int fd, void *buf, size_t len)
{
	REAL(ssize_t, read, (int, void *, size_t));
	return note(C_read, real(fd, buf, len));
}

ssize_t write(int fd, const void *buf, size_t len)
{
	REAL(ssize_t, write, (int, const void *, size_t));
	return note(C_write, real(fd, buf, len));
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
	REAL(ssize_t, readv, (int, const struct iovec *, int));
	return note(C_readv, real(fd, iov, n));
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	REAL(ssize_t, writev, (int, const struct iovec *, int));
	return note(C_writev, real(fd, iov, n));
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	REAL(ssize_t, recv, (int, void *, size_t, int));
	return note(C_recv, real(fd, buf, len, flags));
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
		 socklen_t *fromlen)
{
	REAL(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *, socklen_t *));
	return note(C_recvfrom, real(fd, buf, len, flags, from, fromlen));
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	REAL(ssize_t, recvmsg, (int, struct msghdr *, int));
	return note(C_recvmsg, real(fd, msg, flags));
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	REAL(ssize_t, send, (int, const void *, size_t, int));
	return note(C_send, real(fd, buf, len, flags));
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
	       socklen_t tolen)
{
	REAL(ssize_t, sendto, (int, const void *, size_t, int, const struct sockaddr *,
			       socklen_t));
	return note(C_sendto, real(fd, buf, len, flags, to, tolen));
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	REAL(ssize_t, sendmsg, (int, const struct msghdr *, int));
	return note(C_sendmsg, real(fd, msg, flags));
}

int eventfd_read(int fd, eventfd_t *value)
{
	REAL(int, eventfd_read, (int, eventfd_t *));
	int ret = real(fd, value);
	note(C_eventfd_read, ret == 0 ? 1 : 0);
	return ret;
}

int eventfd_write(int fd, eventfd_t value)
{
	REAL(int, eventfd_write, (int, eventfd_t));
	int ret = real(fd, value);
	note(C_eventfd_write, ret == 0 ? 1 : 0);
	return ret;
}

int sched_yield(void)
{
	REAL(int, sched_yield, (void));
	return (int)note(C_sched_yield, real());
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long nlocal,
			 const struct iovec *remote, unsigned long nremote, unsigned long flags)
{
	REAL(ssize_t, process_vm_readv, (pid_t, const struct iovec *, unsigned long,
					 const struct iovec *, unsigned long, unsigned long));
	return note(C_process_vm_readv, real(pid, local, nlocal, remote, nremote, flags));
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("SYSCOUNT_OUT");
	FILE *out = path ? fopen(path, "a") : NULL;
	if (!out)
		out = stderr;
	int pid = (int)getpid();
	for (int i = 0; i < C_count; i++)
		if (calls[i])
			fprintf(out, "%d %s %llu %llu\n", pid, names[i],
				(unsigned long long)calls[i], (unsigned long long)ready[i]);
	struct rusage usage;
	if (getrusage(RUSAGE_SELF, &usage) == 0) {
		fprintf(out, "%d csw_voluntary %ld 0\n", pid, usage.ru_nvcsw);
		fprintf(out, "%d csw_involuntary %ld 0\n", pid, usage.ru_nivcsw);
	}
	if (out != stderr)
		fclose(out);
}
