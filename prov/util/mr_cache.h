// util::MrCache: keeps memory registrations after their user is done with them, so the
// next registration of the same pages (a rendezvous from the same buffer) costs a lookup
// instead of a pin and an unpin (70-250 us each for 64 KiB-1 MiB under Soft-RoCE in qemu).
//
// Only what the caller offers is cached: verbs offers registrations with local access only.
// One with remote access is a right given to a peer and must end with the operation it was
// made for (DESIGN.md rule 8), so it never outlives its user here.
//
// Safety: an entry is only cached while util::MemoryMonitor watches its pages; an unmap,
// mremap, madvise(DONTNEED/FREE/REMOVE) or brk shrink of any of them removes the entry
// before the next lookup (an entry still in use is deregistered when its last user
// releases it). Without a monitor, or for a range it cannot watch, acquire() still returns
// an entry, but a private one that release() deregisters.
//
// Limits: max_count entries and max_size bytes cached; over either, unused entries are
// deregistered least recently used first. 0 max_count caches nothing.
//
// Thread safety: one mutex; the registrar is called with it held.
#ifndef OFI_PROV_UTIL_MR_CACHE_H
#define OFI_PROV_UTIL_MR_CACHE_H

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "prov/util/memory_monitor.h"

namespace util {

// What the cache calls to make and drop a registration (verbs: ibv_reg_mr/ibv_dereg_mr).
class MrRegistrar {
public:
	// A registration of [addr, addr+len) with 'access' (the caller's bits), or nullptr
	// with *err set (a negative FI_* code).
	virtual void *reg(void *addr, size_t len, uint64_t access, int *err) noexcept = 0;
	virtual void dereg(void *handle) noexcept = 0;

protected:
	~MrRegistrar() = default;
};

struct MrCacheEntry {
	void *handle = nullptr;   // the registrar's
	uintptr_t start = 0;      // page-aligned range registered
	uintptr_t end = 0;
	uint64_t access = 0;
	unsigned users = 0;
	bool cached = false;      // in the lookup list; else deregistered by its last release
	MrCacheEntry *prev = nullptr; // the list, most recently used first
	MrCacheEntry *next = nullptr;
};

struct MrCacheLimits {
	size_t max_count = 1024;
	size_t max_size = size_t(1) << 30;
	bool use_monitor = true; // false: no monitor, nothing is cached (FI_MR_CACHE_MONITOR)

	// FI_MR_CACHE_MAX_COUNT, FI_MR_CACHE_MAX_SIZE, FI_MR_CACHE_MONITOR (core parameters).
	static MrCacheLimits from_params();
};

class MrCache {
public:
	MrCache(MrRegistrar &registrar, const MrCacheLimits &limits,
		MemoryMonitor &monitor = MemoryMonitor::instance());
	// Deregisters every cached entry; entries still in use must have been released.
	~MrCache();
	MrCache(const MrCache &) = delete;
	MrCache &operator=(const MrCache &) = delete;

	// Whether entries can be cached at all (a monitor runs and max_count > 0).
	bool caching() const { return monitored_ && limits_.max_count > 0; }

	// A registration covering [addr, addr+len) with at least 'access'; nullptr with *err.
	MrCacheEntry *acquire(void *addr, size_t len, uint64_t access, int *err);
	void release(MrCacheEntry *entry);

	struct Stats {
		uint64_t hits = 0;
		uint64_t misses = 0;       // registrations made
		uint64_t uncached = 0;     // of which kept private (unwatchable, too big)
		uint64_t invalidated = 0;  // entries dropped for an unmap
		uint64_t evicted = 0;      // entries dropped for the limits
		size_t count = 0;          // cached now
		size_t bytes = 0;
	};
	Stats stats();

private:
	void apply_unmaps();
	void drop_range(uintptr_t start, uintptr_t end);
	void unlink(MrCacheEntry *e);
	void push_front(MrCacheEntry *e);
	void forget(MrCacheEntry *e); // out of the list; deregistered now if unused
	void evict_over_limits();

	MrRegistrar &registrar_;
	MrCacheLimits limits_;
	MemoryMonitor &monitor_;
	bool monitored_ = false;
	uint64_t seen_ = 0; // monitor log position
	std::mutex mutex_;
	MrCacheEntry *head_ = nullptr;
	MrCacheEntry *tail_ = nullptr;
	Stats stats_;
};

} // namespace util

#endif
