#include "prov/util/mr_cache.h"

#include <new>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

namespace util {
namespace {

uintptr_t page_mask()
{
	static const uintptr_t mask = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) - 1;
	return mask;
}

size_t default_max_size()
{
	// As libfabric: the machine's memory shared by its cores.
	long pages = sysconf(_SC_PHYS_PAGES);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (pages <= 0 || cpus <= 0)
		return size_t(1) << 30;
	return size_t(pages) * (page_mask() + 1) / size_t(cpus);
}

} // namespace

MrCacheLimits MrCacheLimits::from_params()
{
	MrCacheLimits limits;
	limits.max_size = default_max_size();
	size_t value = 0;
	if (fi_param_get(nullptr, "mr_cache_max_count", &value) == 0)
		limits.max_count = value;
	if (fi_param_get(nullptr, "mr_cache_max_size", &value) == 0)
		limits.max_size = value;
	return limits;
}

MrCache::MrCache(MrRegistrar &registrar, const MrCacheLimits &limits, MemoryMonitor &monitor)
	: registrar_(registrar), limits_(limits), monitor_(monitor)
{
	if (limits_.use_monitor && limits_.max_count > 0) {
		monitored_ = monitor_.acquire();
		seen_ = monitor_.logged();
	}
}

MrCache::~MrCache()
{
	{
		std::lock_guard guard(mutex_);
		while (head_)
			forget(head_);
	}
	if (monitored_)
		monitor_.release();
}

void MrCache::unlink(MrCacheEntry *e)
{
	(e->prev ? e->prev->next : head_) = e->next;
	(e->next ? e->next->prev : tail_) = e->prev;
	e->prev = e->next = nullptr;
}

void MrCache::push_front(MrCacheEntry *e)
{
	e->prev = nullptr;
	e->next = head_;
	(head_ ? head_->prev : tail_) = e;
	head_ = e;
}

void MrCache::forget(MrCacheEntry *e)
{
	unlink(e);
	e->cached = false;
	stats_.count--;
	stats_.bytes -= e->end - e->start;
	if (e->users == 0) {
		registrar_.dereg(e->handle);
		delete e;
	}
}

void MrCache::drop_range(uintptr_t start, uintptr_t end)
{
	for (MrCacheEntry *e = head_; e;) {
		MrCacheEntry *next = e->next;
		if (e->start < end && start < e->end) {
			forget(e);
			stats_.invalidated++;
		}
		e = next;
	}
}

void MrCache::apply_unmaps()
{
	if (monitor_.logged() == seen_)
		return;
	UnmappedRange ranges[MemoryMonitor::kLogSize];
	int n = monitor_.read_log(seen_, ranges);
	if (n < 0) { // fell behind the log: nothing cached can be trusted
		while (head_) {
			forget(head_);
			stats_.invalidated++;
		}
		return;
	}
	for (int i = 0; i < n; i++)
		drop_range(ranges[i].start, ranges[i].end);
}

void MrCache::evict_over_limits()
{
	for (MrCacheEntry *e = tail_; e && (stats_.count > limits_.max_count ||
					    stats_.bytes > limits_.max_size);) {
		MrCacheEntry *prev = e->prev;
		if (e->users == 0) {
			forget(e);
			stats_.evicted++;
		}
		e = prev;
	}
}

MrCacheEntry *MrCache::acquire(void *addr, size_t len, uint64_t access, int *err)
{
	auto want = reinterpret_cast<uintptr_t>(addr);
	uintptr_t start = want & ~page_mask();
	uintptr_t end = (want + len + page_mask()) & ~page_mask();
	std::lock_guard guard(mutex_);
	if (monitored_) {
		monitor_.sync(); // before the log: see memory_monitor.h
		apply_unmaps();
	}
	if (monitored_) {
		for (MrCacheEntry *e = head_; e; e = e->next) {
			if (e->start <= start && end <= e->end && (access & ~e->access) == 0) {
				e->users++;
				if (e != head_) {
					unlink(e);
					push_front(e);
				}
				stats_.hits++;
				return e;
			}
		}
	}
	auto *e = new (std::nothrow) MrCacheEntry;
	if (!e) {
		*err = -FI_ENOMEM;
		return nullptr;
	}
	// Watched before registered: an unmap after the watch is logged and drops the entry;
	// one before it makes the watch fail or see the new mapping.
	bool cache = monitored_ && len > 0 && end - start <= limits_.max_size &&
		     monitor_.watch(addr, len);
	if (!cache) { // exactly what was asked, as without a cache
		start = want;
		end = want + len;
	}
	e->handle = registrar_.reg(reinterpret_cast<void *>(start), end - start, access, err);
	if (!e->handle) {
		delete e;
		return nullptr;
	}
	e->start = start;
	e->end = end;
	e->access = access;
	e->users = 1;
	stats_.misses++;
	if (!cache) {
		stats_.uncached++;
		return e;
	}
	e->cached = true;
	push_front(e);
	stats_.count++;
	stats_.bytes += end - start;
	evict_over_limits();
	return e;
}

void MrCache::release(MrCacheEntry *e)
{
	std::lock_guard guard(mutex_);
	if (--e->users == 0 && !e->cached) {
		registrar_.dereg(e->handle);
		delete e;
	}
	if (monitored_)
		apply_unmaps(); // pinned pages of unmapped entries go now, not at the next acquire
}

MrCache::Stats MrCache::stats()
{
	std::lock_guard guard(mutex_);
	return stats_;
}

} // namespace util
