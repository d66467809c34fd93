// ShmEndpoint: construction, options, cancel and the progress entry points.
#include "prov/shm/shm_endpoint.h"

#include "prov/shm/shm_conn_request.h"
#include "prov/shm/shm_passive_endpoint.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"

#include <rdma/fi_cm.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace shm {
namespace {

size_t queue_size(size_t asked, size_t fallback)
{
	return std::min(asked ? asked : fallback, kMaxQueue);
}

} // namespace

ShmEndpoint::ShmEndpoint(ShmDomain &domain, const struct fi_info *info, void *context)
    : util::Endpoint(domain, info, context),
      tx_queue_(queue_size(info->tx_attr ? info->tx_attr->size : 0, settings().tx_size)),
      rx_queue_(queue_size(info->rx_attr ? info->rx_attr->size : 0, settings().rx_size)),
      responses_(tx_queue_.capacity()),
      pending_(tx_queue_.capacity())
{
	// Every index free, the last taken first; never grows (bounded by tx_size).
	free_pending_.reserve(pending_.size());
	for (size_t i = pending_.size(); i-- > 0;)
		free_pending_.push_back(static_cast<uint32_t>(i));
	if (!info->src_addr || !parse_address(info->src_addr, info->src_addrlen, &local_))
		address_for_service("0", &local_);
	if (info->dest_addr)
		have_peer_ = parse_address(info->dest_addr, info->dest_addrlen, &peer_);
	if (info->handle && info->handle->fclass == FI_CLASS_PEP) {
		auto *pep = util::fid_cast<ShmPassiveEndpoint>(info->handle, FI_CLASS_PEP);
		if (!pep)
			throw util::Error(-FI_EINVAL);
		local_ = pep->address();
	} else if (info->handle) {
		auto *request = util::fid_cast<ConnRequest>(info->handle, FI_CLASS_CONNREQ);
		if (!request)
			throw util::Error(-FI_EINVAL);
		if (request->sock() < 0) {
			delete request; // its listener was closed meanwhile
			throw util::Error(-FI_ECONNABORTED);
		}
		request->release();
		sock_ = request->take_sock();
		segment_ = request->take_segment();
		peer_bell_ = request->take_peer_bell();
		delete request;
		from_request_ = true;
		if (info->dest_addr)
			have_peer_ = parse_address(info->dest_addr, info->dest_addrlen, &peer_);
	}
	install_ops<ShmEndpoint>();
}
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().send);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().sendv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().sendmsg);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().inject);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().senddata);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().injectdata);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().recv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().recvv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<ShmEndpoint>().recvmsg);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().read);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().readv);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().readmsg);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().write);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().writev);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().writemsg);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().inject);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().writedata);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<ShmEndpoint>().injectdata);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmEndpoint>().getname);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmEndpoint>().getpeer);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmEndpoint>().connect);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmEndpoint>().accept);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmEndpoint>().shutdown);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<ShmEndpoint>().cancel);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<ShmEndpoint>().getopt);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<ShmEndpoint>().rx_size_left);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<ShmEndpoint>().tx_size_left);

ShmEndpoint::~ShmEndpoint()
{
	util::LockGuard guard(domain().lock());
	release_connection();
}

int ShmEndpoint::close()
{
	if (busy())
		return -FI_EBUSY;
	{
		util::LockGuard guard(domain().lock());
		release_connection();
		state_ = State::closed;
		// Outstanding operations are discarded silently (fi_endpoint(3)); events naming
		// this fid go too, so none is read after its memory is reused.
		if (eq())
			eq()->discard_events_of(&ep_fid()->fid);
	}
	return util::Endpoint::close();
}

void ShmEndpoint::release_connection()
{
	if (in_engine_) {
		domain().engine().remove_source(this);
		in_engine_ = false;
	}
	if (sock_ >= 0) {
		domain().engine().remove_fd(sock_);
		::close(sock_);
		sock_ = -1;
	}
	if (own_bell_ >= 0) {
		domain().engine().remove_fd(own_bell_);
		::close(own_bell_);
		own_bell_ = -1;
	}
	if (peer_bell_ >= 0) {
		::close(peer_bell_);
		peer_bell_ = -1;
	}
	segment_.reset();
	pending_segment_.reset();
}

int ShmEndpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_CM_DATA_SIZE) {
		if (!optval || !optlen)
			return -FI_EINVAL;
		if (*optlen < sizeof(size_t)) {
			*optlen = sizeof(size_t);
			return -FI_ETOOSMALL;
		}
		*static_cast<size_t *>(optval) = kMaxCmData;
		*optlen = sizeof(size_t);
		return 0;
	}
	return util::Endpoint::getopt(level, optname, optval, optlen);
}

ssize_t ShmEndpoint::cancel(void *context)
{
	util::LockGuard guard(domain().lock());
	for (size_t i = 0; i < rx_queue_.size(); i++) {
		RxEntry &r = rx_queue_.at(i);
		// The front receive may be taking a message: it can no longer be cancelled.
		if (r.canceled || r.context != context ||
		    (i == 0 && incoming_.active && incoming_.op == kOpMsg))
			continue;
		r.canceled = true;
		fail_rx(r.context, FI_RECV | FI_MSG, FI_ECANCELED, 0, 0,
			r.count ? r.iov[0].iov_base : nullptr);
		return 0;
	}
	return -FI_ENOENT;
}

ssize_t ShmEndpoint::rx_size_left()
{
	util::LockGuard guard(domain().lock());
	return enabled() ? static_cast<ssize_t>(rx_queue_.space()) : -FI_EOPBADSTATE;
}

ssize_t ShmEndpoint::tx_size_left()
{
	util::LockGuard guard(domain().lock());
	// An RMA operation also needs a pending entry until its answer comes.
	size_t left = std::min(tx_queue_.space(), free_pending_.size());
	return enabled() ? static_cast<ssize_t>(left) : -FI_EOPBADSTATE;
}

void ShmEndpoint::on_fd_ready(int fd, uint32_t)
{
	if (fd == own_bell_) {
		drain_doorbell(own_bell_);
		bell_asked_ = false; // drained: progress() need not read it again
		progress();
	} else if (fd == sock_) {
		if (state_ == State::connecting)
			on_reply();
		else
			on_socket_event();
	}
}

void ShmEndpoint::progress()
{
	if (state_ != State::connected)
		return;
	if (bell_asked_)
		take_back_doorbell();
	// A busy poller's usual pass finds nothing: no slot ready, nothing of ours or owed to
	// the peer to send. It ends here, after one look at the next slot's seq (which
	// drain_rx would take too). Anything else takes the full pass below.
	if (!rx_ring_.has_ready() && tx_queue_.empty() &&
	    responses_.empty() && !rx_paused_ && !domain().engine().keep_armed())
		return;
	if (!drain_rx() || !push_tx())
		return;
	// A request that waited for room for its answer can be taken now that answers left.
	if (rx_paused_ && !responses_.full() && drain_rx())
		push_tx();
	// Someone polls an FI_GETWAIT fd of our domain without fi_trywait: nobody would arm
	// before it sleeps, so we stay armed after every pass (the peer rings for what it
	// writes next). Work that arrived before arming rings our own doorbell instead, so
	// that fd does not sleep over it.
	if (domain().engine().keep_armed() && !before_sleep())
		ring_doorbell(own_bell_);
}

void ShmEndpoint::take_back_doorbell()
{
	// Only once the ring shows messages: while it is empty the request stands (a sleeper
	// that armed through fi_trywait and reads once more before polling still gets its
	// doorbell).
	uint32_t ready = 0;
	if (!rx_ring_.ready_slots(&ready) || ready == 0)
		return;
	bell_asked_ = false;
	if (rx_ring_.disarm()) {
		// The peer rang for these messages: the doorbell is read now, so the engine's fd
		// is quiet again without an epoll_wait finding and dispatching it. Should the
		// peer not have written it yet, the read finds nothing and the late doorbell
		// costs one wake-up, which the engine's probe then drains.
		drain_doorbell(own_bell_);
		domain().engine().note_drained_by_source();
	}
}

bool ShmEndpoint::before_sleep()
{
	if (state_ != State::connected)
		return true;
	// Something to send and no room: the consumer rings us when it frees a slot.
	if (next_tx()) {
		uint32_t free_slots = 0;
		if (!tx_ring_.free_slots(&free_slots) || free_slots > 0 ||
		    tx_ring_.wait_for_space())
			return false; // room (or a corrupt tail, for progress to report)
	}
	uint32_t ready = 0;
	if (!rx_ring_.ready_slots(&ready))
		return false;
	if (ready == 0) {
		bell_asked_ = true;
		if (!rx_ring_.arm())
			return true;
		// Nothing ready after all: arm()'s barrier failed, so we must not sleep.
		if (!rx_ring_.ready_slots(&ready) || ready == 0)
			return false;
	}
	// Slots wait: sleep only if progress could not take them either (a message with no
	// receive posted, a request with no room for its answer); fi_recv or our freed
	// transmit slots move them, not the peer.
	if (incoming_.active)
		return false;
	SlotHeader header;
	memcpy(&header, rx_ring_.slot(), sizeof(header));
	return !ready_for(header.op);
}

void ShmEndpoint::cancel_all()
{
	while (!tx_queue_.empty()) {
		TxEntry &t = tx_queue_.front();
		// RMA operations are reported from the pending table below, once each.
		if (t.kind == TxKind::msg)
			fail_tx(t.context, FI_SEND | FI_MSG, FI_ECANCELED, 0, t.total);
		tx_queue_.pop();
	}
	while (!responses_.empty())
		responses_.pop(); // nobody is left to answer
	for (Pending &p : pending_) {
		if (p.busy)
			complete_pending(p, FI_ECANCELED);
	}
	bool first = true;
	while (!rx_queue_.empty()) {
		RxEntry &r = rx_queue_.front();
		if (!r.canceled) {
			// A message cut off half-way is an I/O error, the rest were never used.
			int err = first && incoming_.active && incoming_.op == kOpMsg
					  ? FI_EIO
					  : FI_ECANCELED;
			fail_rx(r.context, FI_RECV | FI_MSG, err, 0, 0,
				r.count ? r.iov[0].iov_base : nullptr);
		}
		first = false;
		rx_queue_.pop();
	}
	incoming_ = Incoming{};
}

void ShmEndpoint::connection_lost(int err)
{
	if (state_ == State::closed)
		return;
	if (err)
		FI_WARN(&provider, FI_LOG_EP_DATA, "connection to %s failed: %s\n", peer_.text,
			fi_strerror(-err));
	state_ = State::closed;
	release_connection();
	cancel_all();
	if (eq())
		eq()->write_cm(FI_SHUTDOWN, &ep_fid()->fid, nullptr, nullptr, 0);
}

} // namespace shm
