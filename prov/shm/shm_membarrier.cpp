#include "prov/shm/shm_membarrier.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#if __has_include(<linux/membarrier.h>)
#include <linux/membarrier.h>
#define SHM_HAVE_MEMBARRIER_H 1
#endif

namespace shm {
namespace {

std::atomic<bool> g_forced_off{false};
// The process (pid) that registered, and one whose query or registration failed: a
// forked child has a pid of its own and registers again.
std::atomic<pid_t> g_registered{0};
std::atomic<pid_t> g_refused{0};

// (The commands are an enum, not macros: the header's presence is the test.)
#if defined(SYS_membarrier) && defined(SHM_HAVE_MEMBARRIER_H)
long call_membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

bool register_process()
{
	long cmds = call_membarrier(MEMBARRIER_CMD_QUERY);
	long needed = MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
	return cmds >= 0 && (cmds & needed) == needed &&
	       call_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

bool barrier_all()
{
	return call_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0;
}
#else
bool register_process() { return false; }
bool barrier_all() { return false; }
#endif

} // namespace

bool membarrier_ready()
{
	if (g_forced_off.load(std::memory_order_relaxed))
		return false;
	pid_t pid = getpid();
	if (g_registered.load(std::memory_order_acquire) == pid)
		return true;
	if (g_refused.load(std::memory_order_relaxed) == pid)
		return false;
	// Two threads may both register: the kernel takes that.
	if (!register_process()) {
		g_refused.store(pid, std::memory_order_relaxed);
		return false;
	}
	g_registered.store(pid, std::memory_order_release);
	return true;
}

bool membarrier_all()
{
	return barrier_all();
}

void membarrier_force_fallback(bool on)
{
	g_forced_off.store(on, std::memory_order_relaxed);
}

} // namespace shm
