// Same-host peers over shm (rxm_shm.h), the data side: the shm CQ and EQ drained by progress,
// their wait sources, failures of a shm connection, receive buffers, and closing shm
// endpoints. Setting a connection up (offer, proof, connect, markers) is rxm_shm_setup.cpp.
// README.md, "Same-host peers over shm".
#include "prov/rxm/rxm_shm.h"

#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <algorithm>

namespace rxm {

ShmPath::~ShmPath()
{
	if (pep)
		fi_close(&pep->fid);
	for (struct fid_cntr *c : remote_cntr)
		if (c)
			fi_close(&c->fid);
	if (cq)
		fi_close(&cq->fid);
	if (eq)
		fi_close(&eq->fid);
}

// The distinct CQs and counters bound to the endpoint, as util::Waitables.
template <class Fn>
static void for_each_waitable(RxmCq *tx, RxmCq *rx,
			      const std::array<RxmCntr *, util::Endpoint::kCounterSlots> &cntrs,
			      Fn fn)
{
	if (tx)
		fn(static_cast<util::Waitable *>(tx));
	if (rx && rx != tx)
		fn(static_cast<util::Waitable *>(rx));
	for (auto it = cntrs.begin(); it != cntrs.end(); ++it)
		if (*it && std::find(cntrs.begin(), it, *it) == it)
			fn(static_cast<util::Waitable *>(*it));
}

void RxmEndpoint::shm_register_wait()
{
	if (!shm_ || shm_->wait_registered || !wait_registered_)
		return;
	shm_->wait_registered = true;
	for_each_waitable(tx_cq(), rx_cq(), counters(), [&](util::Waitable *w) {
		shm_->cq_wait.add_to(*w);
		shm_->eq_wait.add_to(*w);
		if (shm_->polled)
			w->add_fdless_source();
	});
}

void RxmEndpoint::shm_unregister_wait()
{
	if (!shm_ || !shm_->wait_registered)
		return;
	shm_->wait_registered = false;
	for_each_waitable(tx_cq(), rx_cq(), counters(), [&](util::Waitable *w) {
		shm_->cq_wait.remove_from(*w);
		shm_->eq_wait.remove_from(*w);
		if (shm_->polled)
			w->remove_fdless_source();
	});
}

bool RxmEndpoint::shm_may_sleep()
{
	if (!shm_ || shm_->polled)
		return true; // polled: the fd-less source wakes sleepers every millisecond
	struct fid *fids[] = {&shm_->cq->fid, &shm_->eq->fid};
	return fi_trywait(shm_->fabric, fids, 2) != -FI_EAGAIN;
}

void RxmEndpoint::close_shm_side()
{
	shm_unregister_wait();
	for (RetiredCoreEp &r : shm_retired_)
		fi_close(&r.ep->fid);
	shm_retired_.clear();
	shm_closing_.clear();
	shm_.reset();
	shm_setups_ = 0;
}

size_t RxmEndpoint::shm_drain_cq()
{
	// progress_and_drain's steps, with the control messages taken during shm's progress
	// handled in between (rxm_shm_direct.cpp: defer_shm_control).
	shm_defer_ok_ = true;
	bool entries = !shm_->cq_progress || shm_->cq_progress->progress(shm_->cq) != 0;
	shm_defer_ok_ = false;
	if (!shm_deferred_.empty())
		run_shm_deferred();
	size_t handled = (entries ? drain_cq(shm_->cq) : 0) + taken_in_place_;
	taken_in_place_ = 0;
	return handled;
}

void RxmEndpoint::shm_check_eq(std::chrono::steady_clock::time_point now)
{
	// Reading the shm EQ costs a pass of the shm fabric's engine (an epoll_wait, which is
	// how a peer's hangup is seen): on every pass that reads the clock while a shm
	// connection is being set up, else (requests, shutdowns) at least every 50 us.
	shm_check_on_send_ = false;
	if (shm_setups_ || now - shm_eq_read_ >= kIdleEqInterval) {
		shm_eq_read_ = now;
		drain_shm_eq();
	}
}

void RxmEndpoint::shm_check_before_send()
{
	// A pass skipped the clock since it was last read (progress()): a shm peer may have
	// died since the shm EQ was last read, and a send into its ring would complete. Over
	// tcp the core's socket tells it at the next pass; here the EQ is read now if it is
	// due, so a send issued after an idle spell sees what a pass reading the clock would
	// have seen. A send right after a pass that read the clock (a ping-pong's: the pass
	// that found the message) pays nothing.
	if (shm_)
		shm_check_eq(std::chrono::steady_clock::now());
	shm_check_on_send_ = false;
}

void RxmEndpoint::drain_shm_until_empty()
{
	for (int i = 0; shm_ && i < 256; i++)
		if (drain_cq(shm_->cq) == 0)
			break;
}

void RxmEndpoint::drain_shm_eq()
{
	alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	for (int i = 0; shm_ && i < 16; i++) {
		uint32_t event = 0;
		ssize_t n = fi_eq_read(shm_->eq, &event, buf, sizeof(buf), 0);
		if (n == -FI_EAVAIL) {
			fi_eq_err_entry err{};
			if (fi_eq_readerr(shm_->eq, &err, 0) < 0)
				break;
			handle_shm_error(err);
			continue;
		}
		if (n < 0)
			break;
		handle_shm_event(event, reinterpret_cast<fi_eq_cm_entry *>(buf),
				 static_cast<size_t>(n));
	}
}

RxmConn *RxmEndpoint::conn_of_shm(fid_t fid) const
{
	if (!fid || std::find(shm_just_closed_.begin(), shm_just_closed_.end(), fid) !=
			    shm_just_closed_.end())
		return nullptr;
	for (const auto &c : conns_)
		if (c && c->shm_ep && &c->shm_ep->fid == fid)
			return c.get();
	return nullptr;
}

void RxmEndpoint::handle_shm_event(uint32_t event, const struct fi_eq_cm_entry *entry,
				   size_t len)
{
	if (len < sizeof(fi_eq_cm_entry))
		return;
	switch (event) {
	case FI_CONNREQ:
		handle_shm_connreq(entry, len - sizeof(fi_eq_cm_entry));
		break;
	case FI_CONNECTED:
		if (RxmConn *conn = conn_of_shm(entry->fid))
			shm_up(conn);
		break;
	case FI_SHUTDOWN:
		if (RxmConn *conn = conn_of_shm(entry->fid)) {
			// What the peer sent before, on either path, is delivered first.
			drain_shm_until_empty();
			drain_core_cq_until_empty();
			shm_failed(conn, -FI_ECONNRESET, "shm connection shut down");
		}
		break;
	default:
		break;
	}
}

void RxmEndpoint::handle_shm_error(const struct fi_eq_err_entry &err)
{
	if (RxmConn *conn = conn_of_shm(err.fid))
		shm_failed(conn, err.err ? -err.err : -FI_EIO, "shm connection failed");
}

void RxmEndpoint::shm_failed(RxmConn *conn, int err, const char *why)
{
	if (conn->state == ConnState::closed)
		return;
	if (conn->peer_moved || conn->shm_moved_queued) {
		// One direction already travels over shm: what was in flight there cannot be
		// recovered in order, so the connection fails like on a core failure.
		// A peer that closes shuts its shm connection down: no warning for that.
		if (err == -FI_ECONNRESET)
			RXM_INFO(FI_LOG_EP_CTRL, "conn %p: %s: closing it\n",
				 static_cast<void *>(conn), why);
		else
			RXM_WARN(FI_LOG_EP_CTRL, "conn %p: %s (%s) after the move: failing it\n",
				 static_cast<void *>(conn), why, fi_strerror(-err));
		fail_conn(conn, err);
		return;
	}
	RXM_INFO(FI_LOG_EP_CTRL, "conn %p: %s (%s): it stays on the core\n",
		 static_cast<void *>(conn), why, fi_strerror(-err));
	close_shm(conn);
	if (conn->shm_state != ShmState::declined)
		set_shm_state(conn, ShmState::declined);
}

void RxmEndpoint::post_shm_rx(RxmConn *conn)
{
	if (!conn->shm_ep || !conn->shm_rx.empty())
		return;
	size_t size = kWireHeaderSize + eager_limit_;
	if (!conn->shm_rx_slab.allocate(kShmRxBuffers * size)) {
		fail_conn(conn, -FI_ENOMEM);
		return;
	}
	conn->shm_rx.resize(kShmRxBuffers);
	// Before the first fi_recv, which reads the ring at once: a message it puts in a buffer
	// must be counted, or a later one would be taken before it (rxm_shm_direct.cpp).
	start_shm_direct(conn);
	for (size_t i = 0; i < kShmRxBuffers; i++) {
		RxBuffer &b = conn->shm_rx[i];
		b.core.kind = CoreOpKind::rx_buffer;
		b.core.owner = nullptr;
		b.conn = conn;
		b.data = conn->shm_rx_slab.data() + i * size;
		b.on_shm = true;
		ssize_t ret = fi_recv(conn->shm_ep, b.data, size, nullptr, 0, &b.core);
		if (ret) {
			RXM_WARN(FI_LOG_EP_CTRL, "posting shm receive buffers: %s\n",
				 fi_strerror(static_cast<int>(-ret)));
			fail_conn(conn, static_cast<int>(ret));
			return;
		}
	}
}

void RxmEndpoint::close_shm(RxmConn *conn)
{
	if (!conn->shm_ep)
		return;
	stop_shm_direct(conn);
	shm_retired_.push_back({conn, conn->shm_ep});
	conn->shm_ep = nullptr; // its events and completions no longer reach this conn
	if (conn->shm_state == ShmState::connecting || conn->shm_state == ShmState::accepting)
		set_shm_state(conn, ShmState::declined);
}

void RxmEndpoint::close_shm_retired()
{
	if (!shm_retired_.empty()) {
		std::vector<RetiredCoreEp> batch;
		batch.swap(shm_retired_);
		for (RetiredCoreEp &r : batch) {
			fi_close(&r.ep->fid);
			shm_just_closed_.push_back(&r.ep->fid);
		}
		// Events queued for them before the close are dropped by fid (a later endpoint
		// may get the same address): read them now.
		drain_shm_eq();
		shm_just_closed_.clear();
		shm_closing_.insert(shm_closing_.end(), batch.begin(), batch.end());
	}
	if (shm_closing_.empty() || !shm_)
		return;
	// What shm completed before the close is handled the normal way; then no completion
	// read later points into the receive buffers freed here.
	for (int i = 0; i < 256; i++)
		if (drain_cq(shm_->cq) == 0) {
			for (RetiredCoreEp &r : shm_closing_) {
				std::vector<RxBuffer>().swap(r.conn->shm_rx);
				r.conn->shm_rx_slab.release();
			}
			shm_closing_.clear();
			return;
		}
}

} // namespace rxm
