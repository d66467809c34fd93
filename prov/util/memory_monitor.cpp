#include "prov/util/memory_monitor.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

namespace util {
namespace {

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

constexpr uint64_t kEvents =
	UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP;

uintptr_t page_size()
{
	static const uintptr_t size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
	return size;
}

// FI_MR_CACHE_MONITOR: userfaultfd (or uffd, the default) or disabled.
bool monitor_enabled()
{
	char *value = nullptr;
	if (fi_param_get(nullptr, "mr_cache_monitor", &value) != 0 || !value || !*value)
		return true;
	return strcmp(value, "disabled") != 0;
}

} // namespace

MemoryMonitor &MemoryMonitor::instance()
{
	// Never destroyed: a reader thread of a process that exits without closing its domains
	// must not find its object gone.
	static MemoryMonitor *monitor = new MemoryMonitor();
	return *monitor;
}

int MemoryMonitor::open_uffd()
{
#ifdef __NR_userfaultfd
	int fd = static_cast<int>(syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK));
	// Unprivileged processes get only user-mode faults (vm.unprivileged_userfaultfd=0); we
	// trap no faults at all, so that mode loses nothing.
	if (fd < 0 && errno == EPERM)
		fd = static_cast<int>(
			syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
	if (fd < 0)
		return -1;
	struct uffdio_api api = {};
	api.api = UFFD_API;
	api.features = kEvents;
	if (ioctl(fd, UFFDIO_API, &api) != 0 || (api.features & kEvents) != kEvents) {
		close(fd);
		return -1;
	}
	return fd;
#else
	return -1;
#endif
}

bool MemoryMonitor::available()
{
	int fd = open_uffd();
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool MemoryMonitor::acquire()
{
	std::lock_guard guard(life_mutex_);
	if (users_ > 0) {
		users_++;
		return true;
	}
	if (!monitor_enabled())
		return false;
	int uffd = open_uffd();
	if (uffd < 0)
		return false; // the caller says so in its log
	int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake < 0) {
		close(uffd);
		return false;
	}
	uffd_ = uffd;
	wake_fd_ = wake;
	stop_.store(false);
	// The reader takes no signal meant for the application's threads.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	// pthread_create, not std::thread: std::thread frees its start state in the new
	// thread, and the reader must not allocate or free (a free may trim the heap).
	if (pthread_create(&reader_, nullptr, reader_main, this) != 0) {
		pthread_sigmask(SIG_SETMASK, &old, nullptr);
		close(uffd_);
		close(wake_fd_);
		uffd_ = wake_fd_ = -1;
		return false;
	}
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	users_ = 1;
	return true;
}

void MemoryMonitor::release()
{
	std::lock_guard guard(life_mutex_);
	if (users_ == 0 || --users_ > 0)
		return;
	stop_.store(true);
	uint64_t one = 1;
	ssize_t n = write(wake_fd_, &one, sizeof(one));
	(void)n;
	pthread_join(reader_, nullptr);
	// Closing releases every watched range; an unmapper blocked on an unread event is
	// woken by the release.
	close(uffd_);
	close(wake_fd_);
	uffd_ = wake_fd_ = -1;
}

bool MemoryMonitor::watch(const void *addr, size_t len)
{
	if (uffd_ < 0 || len == 0)
		return false;
	uintptr_t mask = page_size() - 1;
	uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~mask;
	uintptr_t end = (reinterpret_cast<uintptr_t>(addr) + len + mask) & ~mask;
	struct uffdio_register reg = {};
	reg.range.start = start;
	reg.range.len = end - start;
	// Write-protect mode only: missing-page mode would trap the kernel's own faults on
	// the range (a recv() into it after DONTNEED), which fail with EFAULT under
	// UFFD_USER_MODE_ONLY; nothing is ever write-protected, so no fault is trapped.
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	return ioctl(uffd_, UFFDIO_REGISTER, &reg) == 0;
}

void MemoryMonitor::sync() const
{
	uint64_t started = reads_started_.load(std::memory_order_seq_cst);
	while (reads_done_.load(std::memory_order_seq_cst) < started)
		sched_yield(); // the reader is between its read and the log: let it finish
}

void MemoryMonitor::log_event(uintptr_t start, uintptr_t end)
{
	std::lock_guard guard(log_mutex_);
	uint64_t n = logged_.load(std::memory_order_relaxed);
	log_[n % kLogSize] = {start, end};
	logged_.store(n + 1, std::memory_order_seq_cst);
}

int MemoryMonitor::read_log(uint64_t &seen, UnmappedRange *out)
{
	std::lock_guard guard(log_mutex_);
	uint64_t n = logged_.load(std::memory_order_relaxed);
	if (n - seen > kLogSize) {
		seen = n;
		return -1;
	}
	int count = 0;
	for (uint64_t i = seen; i < n; i++)
		out[count++] = log_[i % kLogSize];
	seen = n;
	return count;
}

void *MemoryMonitor::reader_main(void *self)
{
	static_cast<MemoryMonitor *>(self)->run();
	return nullptr;
}

void MemoryMonitor::run()
{
	// No allocation and no lock but log_mutex_ in here: an unmapping thread waits for us.
	struct uffd_msg msgs[32];
	for (;;) {
		struct pollfd fds[2] = {{uffd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
		if (poll(fds, 2, -1) < 0)
			continue; // EINTR
		if (stop_.load())
			return;
		if (!(fds[0].revents & POLLIN))
			continue;
		reads_started_.fetch_add(1, std::memory_order_seq_cst);
		ssize_t got = read(uffd_, msgs, sizeof(msgs));
		for (ssize_t i = 0; got > 0 && i < got / ssize_t(sizeof(msgs[0])); i++) {
			const struct uffd_msg &m = msgs[i];
			switch (m.event) {
			case UFFD_EVENT_UNMAP:
				log_event(m.arg.remove.start, m.arg.remove.end);
				break;
			case UFFD_EVENT_REMOVE:
				log_event(m.arg.remove.start, m.arg.remove.end);
				break;
			case UFFD_EVENT_REMAP:
				log_event(m.arg.remap.from, m.arg.remap.from + m.arg.remap.len);
				break;
			default: // no fault is ever trapped; nothing else was asked for
				break;
			}
		}
		reads_done_.fetch_add(1, std::memory_order_seq_cst);
	}
}

} // namespace util
