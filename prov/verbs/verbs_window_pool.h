// The domain's type-2 memory windows for ofi_rxm's rendezvous sources (verbs_mr.h), kept for
// reuse instead of an ibv_alloc_mw + ibv_dealloc_mw (two system calls) per offered buffer.
//
// A window may be bound again only once it is free, and its old key must be dead when the
// region it served closes. The peer that read the buffer kills the key itself: its
// acknowledgement (rxm's rndv_done) goes as a send with invalidate (OFI_SEND_INVALIDATE,
// prov/util/mr_bind_flag.h), which our device executes before it completes the receive,
// and that completion says which key was invalidated. Only a window whose current key was
// so invalidated, on the QP it was bound over, goes back to the pool; any other (a peer
// that did not invalidate, or a bind that never completed) is deallocated at close as
// before (synchronous: the key is dead when fi_close returns). A window never bound goes
// back as it is. Reuse binds with the next key (ibv_inc_rkey), so a key of an earlier use
// names nothing.
#ifndef OFI_PROV_VERBS_WINDOW_POOL_H
#define OFI_PROV_VERBS_WINDOW_POOL_H

#include <cstdint>
#include <mutex>
#include <vector>

#include <infiniband/verbs.h>

namespace verbs {

struct VerbsWindow {
	struct ibv_mw *mw = nullptr;
	uint32_t key = 0;           // the key of its last bind (or its key when allocated)
	uint32_t qp_num = 0;        // the QP it is bound over, while offered
	bool offered = false;       // a bind was posted with `key`
	bool invalidated = false;   // the peer invalidated `key` on `qp_num`
};

class WindowPool {
public:
	explicit WindowPool(struct ibv_pd *pd) : pd_(pd) {}
	~WindowPool();
	WindowPool(const WindowPool &) = delete;
	WindowPool &operator=(const WindowPool &) = delete;

	// A free window, or a new one; nullptr when the device gives none (errno set).
	VerbsWindow *take();
	// The next key for a bind of `w` (not yet used by it).
	static uint32_t next_key(const VerbsWindow &w) { return ibv_inc_rkey(w.key); }
	// A bind of `w` with `key` over QP `qp_num` was posted.
	void offered(VerbsWindow *w, uint32_t qp_num, uint32_t key);
	// From a receive completion: the device invalidated `key` for a send arriving on QP
	// `qp_num`. Ignored unless it is an offered window's current key on that QP.
	void note_invalidated(uint32_t qp_num, uint32_t key);
	// The region of `w` closes: 0 once the key is dead (pooled, or deallocated), else the
	// ibv_dealloc_mw error (the window is kept by the caller then).
	int give_back(VerbsWindow *w);
	// Counters for tests: windows allocated and deallocated so far.
	uint64_t allocated() const { return allocated_; }
	uint64_t deallocated() const { return deallocated_; }

private:
	static constexpr size_t kMaxFree = 256;

	struct ibv_pd *pd_;
	std::mutex lock_;
	std::vector<VerbsWindow *> free_;
	std::vector<VerbsWindow *> offered_;
	uint64_t allocated_ = 0;
	uint64_t deallocated_ = 0;
};

} // namespace verbs

#endif
