#include "prov/verbs/verbs_window_pool.h"

#include <algorithm>

namespace verbs {

WindowPool::~WindowPool()
{
	for (VerbsWindow *w : free_) {
		ibv_dealloc_mw(w->mw);
		delete w;
	}
}

VerbsWindow *WindowPool::take()
{
	{
		std::lock_guard guard(lock_);
		if (!free_.empty()) {
			VerbsWindow *w = free_.back();
			free_.pop_back();
			return w;
		}
	}
	struct ibv_mw *mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
	if (!mw)
		return nullptr;
	auto *w = new (std::nothrow) VerbsWindow;
	if (!w) {
		ibv_dealloc_mw(mw);
		return nullptr;
	}
	w->mw = mw;
	w->key = mw->rkey;
	std::lock_guard guard(lock_);
	allocated_++;
	return w;
}

void WindowPool::offered(VerbsWindow *w, uint32_t qp_num, uint32_t key)
{
	std::lock_guard guard(lock_);
	// A bind names the window by the key the device holds for it (rxe refuses a bind
	// whose window key differs): ibv_mw's rkey follows the binds.
	w->mw->rkey = key;
	w->key = key;
	w->qp_num = qp_num;
	w->offered = true;
	w->invalidated = false;
	offered_.push_back(w);
}

void WindowPool::note_invalidated(uint32_t qp_num, uint32_t key)
{
	std::lock_guard guard(lock_);
	for (VerbsWindow *w : offered_)
		if (w->key == key && w->qp_num == qp_num) {
			w->invalidated = true;
			return;
		}
}

int WindowPool::give_back(VerbsWindow *w)
{
	{
		std::lock_guard guard(lock_);
		auto it = std::find(offered_.begin(), offered_.end(), w);
		if (it != offered_.end())
			offered_.erase(it);
		// Free for a new bind: never bound, or its key killed by the device already.
		bool dead = !w->offered || w->invalidated;
		if (dead && free_.size() < kMaxFree) {
			w->offered = false;
			w->invalidated = false;
			free_.push_back(w);
			return 0;
		}
	}
	// Synchronous: once it returns the device refuses the key.
	if (int ret = ibv_dealloc_mw(w->mw)) {
		std::lock_guard guard(lock_);
		if (w->offered)
			offered_.push_back(w); // still offered: its key may still be invalidated
		return ret;
	}
	delete w;
	std::lock_guard guard(lock_);
	deallocated_++;
	return 0;
}

} // namespace verbs
