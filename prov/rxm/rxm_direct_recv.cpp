// Direct receives: an eager message that matches a posted receive is placed by the core
// straight into the application's buffer, instead of into a shared receive buffer that rxm
// then copies out (the receiver's one user-space copy of a streamed message; raw TCP has
// none). Over a core offering prov/util/rx_place_ops.h on its shared receive contexts (our
// tcp), the core offers every message to offer_direct() once its header (tcp's and rxm's)
// has arrived and before any of it is placed.
//
// Order: messages of one connection must be matched in the order they were sent. The core
// hands one connection's messages over in order, but one placed in a shared buffer is matched
// only when rxm reads its completion. So a message is taken directly only while no shared
// buffer holds a message rxm has not handled yet (srx_in_core_: set for the buffer every
// declined message goes to, cleared when rxm handles it); otherwise it takes the buffer too.
// A message the core could not show rxm (its header not there yet, or rxm's lock held by
// another thread) is declined the same way.
//
// Locks: the offer comes from inside the core's progress, under the core domain's lock, on
// whatever thread progresses the domain (another endpoint's reader included). rxm's own calls
// take its endpoint lock before the core's, so the offer only tries the endpoint lock: a
// thread holding it (this one, inside its own progress, or another) is never waited for.
//
// A message taken directly ends with a core completion whose context is the RecvOp
// (CoreOpKind::rx_direct), read in order with the others; if its stream ends first the core
// completes it with an error, and if rxm closes the core endpoint first finish_core_held
// fails it. The application's receive is claimed from the offer on, as a segmented or
// rendezvous message claims it at its first segment or request.
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/rxm/rxm_recv_inline.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdint>

namespace rxm {

namespace {
constexpr size_t kNoBuffer = SIZE_MAX;
}

void RxmEndpoint::start_direct_recv()
{
	const ofi_rx_place_ops *ops = domain_->rx_place();
	if (!ops || !srx_ || !params().direct_recv)
		return;
	srx_in_core_.reset(new std::atomic<bool>[srx_buffers_.size()]());
	srx_marked_.store(0, std::memory_order_relaxed);
	srx_reposts_.reserve(srx_buffers_.size());
	direct_recv_ = ops->set_placer(srx_, kWireHeaderSize, offer_direct_thunk, this) == 0;
}

// Reposting a shared buffer resumes the core's reading at once (a stream that waited for
// a buffer reads on inside fi_recv), and while the batch of completions being handled still
// holds buffers rxm has not handled, every message read then is declined and takes a buffer
// too: a stream would stay on the copying path for good. Reposted after the batch, the
// buffers find nothing pending, and the stream's next messages go straight to their
// receives.
void RxmEndpoint::repost_srx_batch()
{
	if (batching_srx_reposts_)
		return; // an outer drain reposts them
	for (size_t i = 0; i < srx_reposts_.size(); i++)
		repost(srx_reposts_[i]);
	srx_reposts_.clear();
}

void RxmEndpoint::stop_direct_recv()
{
	if (direct_recv_)
		domain_->rx_place()->set_placer(srx_, 0, nullptr, nullptr);
	direct_recv_ = false;
}

int RxmEndpoint::offer_direct_thunk(void *arg, struct ofi_rx_place_request *req) noexcept
{
	try {
		return static_cast<RxmEndpoint *>(arg)->offer_direct(req);
	} catch (...) {
		return 0; // declined: the shared buffer takes it as before
	}
}

size_t RxmEndpoint::srx_index(const void *rx_context) const
{
	// A shared buffer's context is its CoreContext, the first member of the RxBuffer.
	auto *buf = static_cast<const RxBuffer *>(rx_context);
	const RxBuffer *first = srx_buffers_.data();
	if (!buf || srx_buffers_.empty() || buf < first || buf >= first + srx_buffers_.size())
		return kNoBuffer;
	return static_cast<size_t>(buf - first);
}

void RxmEndpoint::mark_srx_in_core(size_t index)
{
	if (index != kNoBuffer)
		if (!srx_in_core_[index].exchange(true, std::memory_order_relaxed))
			srx_marked_.fetch_add(1, std::memory_order_relaxed);
}

void RxmEndpoint::on_srx_buffer_back(RxBuffer *buf)
{
	size_t index = direct_recv_ ? srx_index(&buf->core) : kNoBuffer;
	if (index != kNoBuffer && srx_in_core_[index].exchange(false, std::memory_order_relaxed))
		srx_marked_.fetch_sub(1, std::memory_order_relaxed);
}

// A small message that tcp read whole into its stage is taken there (rx_inplace_ops.h, the
// consumer of rxm_shm_direct.cpp): matched and copied once into the application's buffer,
// with no core completion to read back. Every message is shown to it before the placer, so
// one declined here (anything but a plain eager message, or an earlier one still waiting in
// the core's CQ) goes on to the placer or a shared buffer, whose marks keep the order.
int RxmEndpoint::srx_consume_thunk(void *arg, const struct ofi_rx_inplace_request *req) noexcept
{
	try {
		auto *conn = static_cast<RxmConn *>(arg);
		RxmEndpoint *ep = conn->ep;
		bool taken = false;
		if (ep->lock_.try_lock()) {
			taken = !ep->core_holds_messages() && ep->take_from_shm(conn, req);
			ep->lock_.unlock();
		}
		return taken ? 1 : 0;
	} catch (...) {
		return 0; // declined: the placer or a shared buffer takes it as before
	}
}

bool RxmEndpoint::core_holds_messages() const
{
	if (!direct_recv_ || directs_in_core_)
		return true; // without the placer's marks nobody knows: assume one waits
	// A count of the marks, not a walk over every shared buffer's (~50 instructions per
	// message over tcp): the exchange on a mark counts each change of it exactly once, and
	// the count changes right after it, in the same thread.
	return srx_marked_.load(std::memory_order_relaxed) != 0;
}

int RxmEndpoint::offer_direct(struct ofi_rx_place_request *req)
{
	size_t taker = srx_index(req->rx_context);
	bool taken = false;
	if (req->may_take && req->head && lock_.try_lock()) {
		taken = take_direct(req, taker);
		lock_.unlock();
	}
	if (!taken)
		mark_srx_in_core(taker);
	return taken ? 1 : 0;
}

bool RxmEndpoint::take_direct(struct ofi_rx_place_request *req, size_t taker)
{
	// An earlier message waits to be matched in a buffer other than the taker: the count
	// of the marks, as core_holds_messages, not a walk over every shared buffer's (~50
	// instructions per message over tcp). Nothing marks or unmarks meanwhile: marks change
	// in the core's offers, serialised by its domain lock, and in rxm's handling of a
	// buffer, under lock_, which this holds.
	size_t marked = srx_marked_.load(std::memory_order_relaxed);
	if (taker != kNoBuffer && srx_in_core_[taker].load(std::memory_order_relaxed))
		marked--;
	if (marked)
		return false;
	WireHeader hdr;
	if (decode_message_header(static_cast<const uint8_t *>(req->head), req->msg_len, &hdr) ||
	    hdr.op != WireOp::eager)
		return false; // anything else takes the shared buffer (a malformed one fails there)
	RxmConn *conn = conn_by_id(hdr.conn_id);
	if (!conn || conn->state == ConnState::closed || conn->sar.active())
		return false;
	bool tagged = hdr.flags & wire_flag::tagged;
	PostedRecv *posted = matcher_.find_posted(tagged ? MatchKind::tagged : MatchKind::msg,
						  source_of(conn), hdr.tag);
	if (!posted)
		return false; // unexpected: buffered from the shared buffer as before
	auto *op = static_cast<RecvOp *>(posted->owner);
	// Multi-receive slices and truncation keep the copying path (it cuts and reports).
	if (op->multi || op->capacity < hdr.total_len || op->iov_count + 1 > OFI_RX_PLACE_MAX_IOV)
		return false;
	claim_receiver(op, hdr.total_len);
	start_message(op, conn, hdr);
	op->core.kind = CoreOpKind::rx_direct;
	op->direct_in_core = true;
	directs_in_core_++;
	req->iov[0] = {direct_header_sink_, kWireHeaderSize};
	size_t n = 1;
	uint64_t left = hdr.total_len;
	for (size_t i = 0; i < op->iov_count && left; i++) {
		size_t take = static_cast<size_t>(std::min<uint64_t>(op->iov[i].iov_len, left));
		if (take)
			req->iov[n++] = {op->iov[i].iov_base, take};
		left -= take;
	}
	req->iov_count = n;
	req->context = &op->core;
	return true;
}

void RxmEndpoint::on_direct_recv(RecvOp *op, size_t len, int err)
{
	op->direct_in_core = false;
	directs_in_core_--;
	op->core.kind = CoreOpKind::rndv_read; // its default (alloc_recv)
	if (!err && len != kWireHeaderSize + op->total_len)
		err = -FI_EIO;
	// Cut off by the connection's end: report why rxm closed it, if it did.
	if (err && op->conn && op->conn->state == ConnState::closed && op->conn->close_error)
		err = op->conn->close_error;
	if (err && !op->error)
		op->error = err;
	complete_recv(op);
}

} // namespace rxm
