// RxmEndpoint: creation, binding, enabling (core EQ, CQ and passive endpoint), options, close,
// and the progress loop that drains the core CQ and EQ.
#include "prov/rxm/rxm_endpoint.h"

#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_cntr.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_fabric.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/util/error.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <thread>

#include <sys/timerfd.h>
#include <unistd.h>

namespace rxm {

namespace {

constexpr size_t kCoreCqSize = 8192;
constexpr size_t kCoreEqSize = 1024;
constexpr size_t kSharedRxBuffers = 4;

uint64_t random_endpoint_id()
{
	std::random_device rd;
	uint64_t id = (uint64_t(rd()) << 32) ^ rd();
	id ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
	return id ? id : 1;
}

} // namespace

RxmEndpoint::RxmEndpoint(RxmDomain *domain, struct fi_info *info, void *context)
	: Endpoint(*domain, info, context), domain_(domain), info_(info)
{
	// Only a progress thread of ours could enter the endpoint beside the application.
	bool own_thread = params().data_auto_progress ||
			  (info->domain_attr && info->domain_attr->data_progress == FI_PROGRESS_AUTO);
	lock_.set_kind(own_thread ? util::Lock::Kind::Mutex : domain->lock_kind());
	install_ops<RxmEndpoint>();
	// A multi-receive buffer is released once less than this is left (fi_endpoint(3)).
	set_min_multi_recv(64);
}

RxmEndpoint::~RxmEndpoint()
{
	fi_freeinfo(info_);
}

int RxmEndpoint::open(RxmDomain *domain, struct fi_info *info, struct fid_ep **ep, void *context)
{
	if (!info || !ep)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	// Auto progress is a thread of ours (start_auto_progress). On a domain whose core and shm
	// domains were opened without locks (FI_THREAD_DOMAIN with manual progress:
	// lower_domains_need_no_lock) it would run beside the application's calls on the other
	// endpoints and registrations of the domain, which share those lower domains.
	if (info->domain_attr &&
	    util::raw_enum(info->domain_attr->data_progress) == FI_PROGRESS_AUTO &&
	    lower_domains_need_no_lock(domain->info())) {
		RXM_WARN(FI_LOG_EP_CTRL, "an FI_PROGRESS_AUTO endpoint on a domain opened "
					 "FI_THREAD_DOMAIN with manual progress: refused (open the "
					 "domain with FI_PROGRESS_AUTO or FI_THREAD_SAFE)\n");
		return -FI_EINVAL;
	}
	fi_info *own = fi_dupinfo(info);
	if (!own)
		return -FI_ENOMEM;
	RxmEndpoint *e = new (std::nothrow) RxmEndpoint(domain, own, context);
	if (!e) {
		fi_freeinfo(own);
		return -FI_ENOMEM;
	}
	*ep = e->ep_fid();
	return 0;
}

int RxmEndpoint::bind(struct fid *bfid, uint64_t flags)
{
	// fi_endpoint(3): remote-side counters need an endpoint made with FI_RMA_EVENT.
	if (bfid && bfid->fclass == FI_CLASS_CNTR && (flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
	    !(info_->caps & FI_RMA_EVENT))
		return -FI_EBADFLAGS;
	std::lock_guard guard(lock_);
	return Endpoint::bind(bfid, flags);
}

int RxmEndpoint::control(int command, void *arg)
{
	// FI_ENABLE starts the progress thread, which takes the lock: it waits until enabling
	// (and util marking the endpoint enabled) is done.
	std::lock_guard guard(lock_);
	return Endpoint::control(command, arg);
}

std::array<RxmCntr *, util::Endpoint::kCounterSlots> RxmEndpoint::counters() const noexcept
{
	std::array<RxmCntr *, kCounterSlots> all{};
	for (int slot = 0; slot < kCounterSlots; slot++)
		all[slot] = static_cast<RxmCntr *>(counter(static_cast<CounterSlot>(slot)));
	return all;
}

int RxmEndpoint::enable()
{
	if (!av())
		return -FI_ENOAV;
	if (!has_completion_target())
		return -FI_ENOCQ;
	choose_limits();
	core_fabric_ = domain_->rxm_fabric().core();

	// Each step either succeeds or leaves what it made for shutdown_all, which releases
	// whatever exists: one way back for a failure at any step, the same as close's.
	using Step = int (RxmEndpoint::*)();
	static constexpr Step kSteps[] = {
		&RxmEndpoint::open_core_queues,	  &RxmEndpoint::open_remote_counters,
		&RxmEndpoint::listen_for_peers,	  &RxmEndpoint::open_srx_if_wanted,
		&RxmEndpoint::prepare_core_conn_info, &RxmEndpoint::allocate_pools,
	};
	for (Step step : kSteps) {
		if (int ret = (this->*step)()) {
			RXM_WARN(FI_LOG_EP_CTRL, "enabling endpoint: %s\n", fi_strerror(-ret));
			shutdown_all();
			return ret;
		}
	}
	attach_to_bound();
	register_wait_sources();
	if (params().data_auto_progress ||
	    (info_->domain_attr && info_->domain_attr->data_progress == FI_PROGRESS_AUTO))
		start_auto_progress();
	return 0;
}

// Message protocol limits (eager, SAR, inject), zero copy and same-host rendezvous, from
// the parameters and what the core offers.
void RxmEndpoint::choose_limits()
{
	const RxmParams &p = params();
	eager_limit_ = p.buffer_size;
	// A byte-stream core leaves unread data in its socket and places payloads where they go:
	// bigger segments cost nothing extra there, only fewer messages.
	if (byte_stream_core() && !p.buffer_size_set)
		eager_limit_ = std::max(p.buffer_size, p.stream_buffer_size);
	sar_limit_ = domain_->rma_capable() ? std::max(p.sar_limit, eager_limit_) : SIZE_MAX;
	// Only where a rendezvous read costs no copy (RDMA: the cores with credit flow
	// control); over tcp the read is a socket transfer like SAR's.
	stream_rndv_ = p.stream_rndv && domain_->rma_capable() && domain_->flow_ctrl() &&
		       sar_limit_ > eager_limit_;
	inject_limit_ = info_->tx_attr ? info_->tx_attr->inject_size : eager_limit_;
	{
		const fi_info *core = domain_->core_info();
		core_iov_limit_ = core->tx_attr && core->tx_attr->iov_limit
					  ? std::min<size_t>(core->tx_attr->iov_limit, kMaxCoreIov)
					  : 1;
		zero_copy_ = !domain_->core_needs_local_mr() && core_iov_limit_ >= 2;
	}
	if (inject_limit_ > eager_limit_)
		inject_limit_ = eager_limit_;
	// Same-host pulls need RMA reads to fall back on; the offer (segments plus kCmaOfferSize
	// bytes) must fit a bounce buffer. Only over byte-stream cores, where the alternative is
	// two copies through the loopback socket, and where the kernel can tell who holds the far
	// end: a peer's pid is believed only when it owns the kernel socket at the far end of the
	// connection (rxm_cma_owner.h), which a core without kernel sockets (verbs) cannot show;
	// or over our shm, whose AF_UNIX socket names the peer's pid (prove_core_peer).
	bool provable = byte_stream_core() || open_core_peer_ops();
	open_core_send_ops();
	if (p.use_cma_set && p.use_cma && !provable)
		RXM_INFO(FI_LOG_EP_CTRL, "use_cma ignored: the core has no kernel sockets by which "
					 "a same-host peer could be proved\n");
	cma_ = provable && (!p.use_cma_set || p.use_cma) && !p.use_rndv_write &&
	       domain_->rma_capable() &&
	       rndv_payload_size(kRndvMaxSegments) + kCmaOfferSize <= eager_limit_ &&
	       cma_make_token(cma_token_);
	cma_rndv_min_ = cma_ ? std::min(p.cma_rndv_min, sar_limit_) : SIZE_MAX;
	// Over shm the ring, not a socket, is the alternative; and never SAR through it.
	cma_rndv_min_shm_ = !cma_ ? SIZE_MAX
		: p.cma_rndv_min_set ? cma_rndv_min_
				     : std::min({p.cma_rndv_min_shm, eager_limit_, sar_limit_});
	if (core_peer_ops_)
		cma_rndv_min_ = cma_rndv_min_shm_;
	RXM_INFO(FI_LOG_EP_CTRL, "eager up to %zu, SAR up to %zu%s, same-host rendezvous %s\n",
		 eager_limit_, sar_limit_, stream_rndv_ ? " (sent alone)" : "",
		 cma_ ? "offered" : "off");
}

bool RxmEndpoint::byte_stream_core() const
{
	const fi_info *core = domain_->core_info();
	return core->ep_attr && core->ep_attr->protocol == FI_PROTO_SOCK_TCP;
}

// The core passive endpoint on the domain's address, and our name (what peers insert).
int RxmEndpoint::listen_for_peers()
{
	int ret = fi_passive_ep(core_fabric_, const_cast<fi_info *>(domain_->core_info()), &pep_,
				nullptr);
	if (!ret)
		ret = fi_pep_bind(pep_, &core_eq_->fid, 0);
	if (!ret)
		ret = fi_listen(pep_);
	if (ret)
		return ret;
	uint8_t name[kCmMaxNameLen * 2];
	size_t len = sizeof(name);
	ret = fi_getname(&pep_->fid, name, &len);
	if (ret)
		return ret;
	if (len > kCmMaxNameLen)
		return -FI_EINVAL;
	own_name_ = canonical_address(name, len);
	memcpy(identity_.name, own_name_.data(), len);
	identity_.name_len = static_cast<uint8_t>(len);
	identity_.endpoint_id = random_endpoint_id();
	conn_id_nonce_ = static_cast<uint32_t>(identity_.endpoint_id >> 52); // 12 bits
	return 0;
}

int RxmEndpoint::open_srx_if_wanted()
{
	// A core with credit flow control (verbs) gets per-connection receives: the credits a
	// peer is granted count receives posted for it alone, which a shared pool cannot promise.
	if (params().use_srx && !domain_->flow_ctrl())
		return open_srx();
	return 0;
}

// The template of the active core endpoints rxm opens per connection.
int RxmEndpoint::prepare_core_conn_info()
{
	core_conn_info_ = fi_dupinfo(domain_->core_info());
	if (!core_conn_info_)
		return -FI_ENOMEM;
	// Active endpoints take an ephemeral source address, not the listener's port.
	free(core_conn_info_->src_addr);
	core_conn_info_->src_addr = nullptr;
	core_conn_info_->src_addrlen = 0;
	// Over sockets, connections leave from our name's IP: peers hold the IP in our CM data
	// against the one they see (rxm_conn_rules.h), and on a host with several addresses the
	// kernel's route could otherwise pick another.
	return byte_stream_core() ? bind_connections_to_own_ip() : 0;
}

// The bounce buffers and the send and receive operation pools; the data path takes from
// them and never allocates.
int RxmEndpoint::allocate_pools()
{
	const RxmParams &p = params();
	size_t tx_count = std::max<size_t>(64, p.msg_tx_size * 2);
	size_t buf_size = kWireHeaderSize + eager_limit_;
	if (!tx_slab_.allocate(tx_count * buf_size))
		return -FI_ENOMEM;
	if (domain_->core_needs_local_mr()) {
		int ret = domain_->register_internal(tx_slab_.data(), tx_slab_.size(),
						     FI_SEND | FI_RECV, &tx_mr_);
		if (ret)
			return ret;
	}
	tx_buffers_.resize(tx_count);
	for (size_t i = 0; i < tx_count; i++) {
		TxBuffer &b = tx_buffers_[i];
		b.core.kind = CoreOpKind::tx_buffer;
		b.core.owner = nullptr;
		b.charged = nullptr;
		b.conn = nullptr;
		b.data = tx_slab_.data() + i * buf_size;
		b.next_free = free_tx_;
		free_tx_ = &b;
		free_tx_count_++;
	}
	size_t op_count = (info_->tx_attr ? info_->tx_attr->size : p.tx_size) + kControlReserve;
	ops_.resize(op_count);
	for (size_t i = op_count; i-- > 0;) {
		ops_[i].index = static_cast<uint32_t>(i);
		ops_[i].in_use = false;
		ops_[i].generation = 0;
		free_ops_.push_back(static_cast<uint32_t>(i));
	}
	size_t recv_count = info_->rx_attr ? info_->rx_attr->size : p.rx_size;
	recvs_.resize(recv_count);
	for (size_t i = recv_count; i-- > 0;) {
		recvs_[i].reset(); // the state of a free receive (rxm_recv_inline.h)
		recvs_[i].in_use = false;
		recvs_[i].next_free = free_recvs_;
		free_recvs_ = &recvs_[i];
	}
	return 0;
}

// Receive buffers shared by all connections, when the core offers shared receive contexts;
// otherwise (srx_ stays null) each connection posts its own.
int RxmEndpoint::open_srx()
{
	// Buffers are reposted as soon as rxm has handled their message, and a byte-stream core
	// leaves what does not fit in its socket, so a small pool serves any number of peers;
	// each buffer a message lands in becomes resident.
	size_t count = std::min<size_t>(params().msg_rx_size, kSharedRxBuffers);
	fi_rx_attr attr{};
	attr.caps = FI_MSG | FI_RECV;
	attr.size = count;
	if (fi_srx_context(domain_->core(), &attr, &srx_, nullptr)) {
		srx_ = nullptr;
		RXM_INFO(FI_LOG_EP_CTRL, "core has no shared receive context: buffers per connection\n");
		return 0;
	}
	size_t size = kWireHeaderSize + eager_limit_;
	if (!srx_slab_.allocate(count * size))
		return -FI_ENOMEM;
	srx_buffers_.resize(count);
	if (domain_->core_needs_local_mr()) {
		int ret = domain_->register_internal(srx_slab_.data(), count * size, FI_RECV,
						     &srx_mr_);
		if (ret)
			return ret;
	}
	void *desc = srx_mr_ ? fi_mr_desc(srx_mr_) : nullptr;
	for (size_t i = 0; i < count; i++) {
		RxBuffer &b = srx_buffers_[i];
		b.core.kind = CoreOpKind::rx_buffer;
		b.core.owner = nullptr;
		b.conn = nullptr;
		b.data = srx_slab_.data() + i * size;
		ssize_t ret = fi_recv(srx_, b.data, size, desc, 0, &b.core);
		if (ret)
			return static_cast<int>(ret);
	}
	start_direct_recv();
	return 0;
}

int RxmEndpoint::open_core_queues()
{
	// Wait fds let blocked readers of our CQs and counters sleep; a core without them
	// still works, polled. Only asked for when a bound CQ or counter has a wait object:
	// the kernel limits how many nested epoll sets may watch one socket (a few dozen at
	// depth 3), so endpoints of FI_WAIT_NONE objects must not add to that nesting.
	bool want_fd = false;
	for (RxmCq *cq : {tx_cq(), rx_cq()})
		want_fd |= cq && cq->wants_wait_fd();
	for (RxmCntr *cntr : counters())
		want_fd |= cntr && cntr->wants_wait_fd();
	fi_eq_attr eq_attr{};
	eq_attr.size = kCoreEqSize;
	eq_attr.wait_obj = want_fd ? FI_WAIT_FD : FI_WAIT_NONE;
	int ret = fi_eq_open(core_fabric_, &eq_attr, &core_eq_, nullptr);
	if (ret && want_fd) {
		eq_attr.wait_obj = FI_WAIT_NONE;
		ret = fi_eq_open(core_fabric_, &eq_attr, &core_eq_, nullptr);
		if (ret)
			return ret;
	} else if (ret) {
		return ret;
	} else if (want_fd) {
		core_eq_wait_.fetch(&core_eq_->fid);
	}
	fi_cq_attr cq_attr{};
	cq_attr.size = kCoreCqSize;
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.wait_obj = want_fd ? FI_WAIT_FD : FI_WAIT_NONE;
	ret = fi_cq_open(domain_->core(), &cq_attr, &core_cq_, nullptr);
	if (ret && want_fd) {
		cq_attr.wait_obj = FI_WAIT_NONE;
		ret = fi_cq_open(domain_->core(), &cq_attr, &core_cq_, nullptr);
		if (ret)
			return ret;
	} else if (ret) {
		return ret;
	} else if (want_fd) {
		core_cq_wait_.fetch(&core_cq_->fid);
	}
	void *progress_ops = nullptr;
	if (fi_open_ops(&core_cq_->fid, OFI_CQ_PROGRESS_OPS_NAME, 0, &progress_ops, nullptr) == 0)
		core_cq_progress_ = static_cast<const ofi_cq_progress_ops *>(progress_ops);
	// Sleepers must also wake when a connection times out (run_conn_timers).
	if (want_fd)
		conn_timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	return 0;
}

// fn gets each as what it is (RxmCq * or RxmCntr *, both util::Waitables).
template <class Fn>
void RxmEndpoint::for_each_bound_waitable(Fn fn) const
{
	if (RxmCq *cq = tx_cq())
		fn(cq);
	if (RxmCq *cq = rx_cq(); cq && cq != tx_cq())
		fn(cq);
	std::array<RxmCntr *, kCounterSlots> cntrs = counters();
	for (auto it = cntrs.begin(); it != cntrs.end(); ++it)
		if (*it && std::find(cntrs.begin(), it, *it) == it)
			fn(*it);
}

void RxmEndpoint::register_wait_sources()
{
	if (wait_registered_)
		return;
	wait_registered_ = true;
	bool polled = !core_cq_wait_.has_fds() || !core_eq_wait_.has_fds();
	bool handed_out = false;
	for_each_bound_waitable([&](util::Waitable *w) {
		core_cq_wait_.add_to(*w);
		core_eq_wait_.add_to(*w);
		w->add_polled_fd(conn_timer_fd_);
		if (polled)
			w->add_fdless_source();
		handed_out = handed_out || w->wait_fd_handed_out();
	});
	if (handed_out) // before this endpoint was enabled
		hand_out_lower_wait_fds_locked();
}

void RxmEndpoint::hand_out_lower_wait_fds()
{
	std::lock_guard guard(lock_);
	hand_out_lower_wait_fds_locked();
}

void RxmEndpoint::hand_out_lower_wait_fds_locked()
{
	// The CQs only: they hold the engines whose sources must stay armed (their EQs hold
	// fds of the fabric's engine, which arms nothing).
	lower_fds_handed_out_ = true;
	core_cq_wait_.hand_out();
	if (shm_)
		shm_->cq_wait.hand_out();
}

void RxmEndpoint::unregister_wait_sources()
{
	shm_unregister_wait();
	if (!wait_registered_)
		return;
	wait_registered_ = false;
	bool polled = !core_cq_wait_.has_fds() || !core_eq_wait_.has_fds();
	for_each_bound_waitable([&](util::Waitable *w) {
		core_cq_wait_.remove_from(*w);
		core_eq_wait_.remove_from(*w);
		w->remove_polled_fd(conn_timer_fd_);
		if (polled)
			w->remove_fdless_source();
	});
}

void RxmEndpoint::attach_to_bound()
{
	if (attached_)
		return;
	attached_ = true;
	for_each_bound_waitable([this](auto *object) { object->attach(this); });
}

void RxmEndpoint::detach_from_bound()
{
	if (!attached_)
		return;
	attached_ = false;
	for_each_bound_waitable([this](auto *object) { object->detach(this); });
}

int RxmEndpoint::core_trywait()
{
	if (!core_cq_ || !core_eq_)
		return 0;
	if (!core_cq_wait_.has_fds() || !core_eq_wait_.has_fds())
		return -FI_EAGAIN;  // no fd to block on: the caller has to poll
	struct fid *fids[] = {&core_cq_->fid, &core_eq_->fid};
	int ret = fi_trywait(core_fabric_, fids, 2);
	ret = ret || shm_may_sleep() ? ret : -FI_EAGAIN;
	if (ret == 0) {
		core_eq_wait_.forget_sleep(); // only this sleep's report counts
		may_have_slept_.store(true, std::memory_order_relaxed); // see progress()
	} else
		core_poll_asked_.store(true, std::memory_order_relaxed); // see progress()
	return ret;
}

bool RxmEndpoint::core_may_sleep()
{
	if (!core_cq_ || !core_eq_ || !core_cq_wait_.has_fds() || !core_eq_wait_.has_fds())
		return true;
	struct fid *fids[] = {&core_cq_->fid, &core_eq_->fid};
	bool may = fi_trywait(core_fabric_, fids, 2) != -FI_EAGAIN && shm_may_sleep();
	if (may) {
		core_eq_wait_.forget_sleep(); // only this sleep's report counts
		may_have_slept_.store(true, std::memory_order_relaxed); // see progress()
	} else
		core_poll_asked_.store(true, std::memory_order_relaxed); // see progress()
	return may;
}

void RxmEndpoint::shutdown_all()
{
	stop_direct_recv(); // first: the core offers nothing more while the rest goes
	unregister_wait_sources();
	for (auto &conn : conns_)
		if (conn) {
			close_core(conn.get());
			close_shm(conn.get());
		}
	close_shm_side();
	for (RetiredCoreEp &r : retired_)
		fi_close(&r.ep->fid);
	retired_.clear();
	closing_.clear(); // closed already; their receive buffers go with conns_
	for (CoreEqEvent &ev : eq_backlog_)
		if (!ev.error && ev.event == FI_CONNREQ)
			fi_freeinfo(reinterpret_cast<fi_eq_cm_entry *>(ev.entry.data())->info);
	eq_backlog_.clear();
	if (pep_)
		fi_close(&pep_->fid);
	pep_ = nullptr;
	for (auto &conn : conns_)
		if (conn && conn->rx_mr)
			fi_close(&conn->rx_mr->fid);
	while (backlogged_.pop_front()) { // before the connections it links go
	}
	conns_.clear();
	free_conn_slots_.clear();
	conn_slot_uses_.clear();
	trim_candidates_.clear();
	credit_waiters_.clear();
	live_conns_ = 0;
	peers_.clear();
	send_routes_.clear();
	routes_changed();
	if (srx_)
		fi_close(&srx_->fid); // after the core endpoints bound to it
	srx_ = nullptr;
	if (srx_mr_)
		fi_close(&srx_mr_->fid);
	srx_mr_ = nullptr;
	srx_buffers_.clear();
	srx_reposts_.clear();
	srx_slab_.release();
	if (tx_mr_)
		fi_close(&tx_mr_->fid);
	tx_mr_ = nullptr;
	for (TxOp &op : ops_)
		close_own_mrs(op.own_mr, op.own_shm_mr, &op.own_mr_count);
	for (RecvOp &op : recvs_)
		if (op.in_use)
			close_own_mrs(op.own_mr, op.own_shm_mr, &op.own_mr_count);
	// The pools go too: a later fi_enable (after a failed one) builds them afresh, and
	// free lists built twice would hand out one slot twice.
	tx_buffers_.clear();
	free_tx_ = nullptr;
	free_tx_count_ = 0;
	tx_slab_.release();
	ops_.clear();
	free_ops_.clear();
	recvs_.clear();
	free_recvs_ = nullptr;
	for (fid_cntr *&core : core_remote_cntr_) {
		if (core)
			fi_close(&core->fid);
		core = nullptr;
	}
	core_remote_seen_[0] = core_remote_seen_[1] = 0;
	if (core_cq_)
		fi_close(&core_cq_->fid);
	core_cq_ = nullptr;
	core_cq_progress_ = nullptr;
	if (core_eq_)
		fi_close(&core_eq_->fid);
	core_eq_ = nullptr;
	core_cq_wait_.clear();
	core_eq_wait_.clear();
	if (conn_timer_fd_ >= 0)
		::close(conn_timer_fd_);
	conn_timer_fd_ = -1;
	conn_timer_armed_ = {};
	conn_timers_active_ = false;
	fi_freeinfo(core_conn_info_);
	core_conn_info_ = nullptr;
	matcher_.drain_unexpected([](UnexpectedMsg *m) { delete static_cast<Unexpected *>(m->owner); });
}

void RxmEndpoint::start_auto_progress()
{
	progress_running_ = true;
	progress_thread_ = std::thread([this] {
		while (progress_running_.load(std::memory_order_acquire)) {
			progress();
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		}
	});
}

void RxmEndpoint::stop_auto_progress()
{
	progress_running_ = false;
	if (progress_thread_.joinable())
		progress_thread_.join();
}

int RxmEndpoint::close()
{
	if (busy())
		return -FI_EBUSY;
	stop_auto_progress(); // before anything it progresses goes away
	{
		std::lock_guard guard(lock_);
		unregister_wait_sources(); // while the CQs and counters are still ours
	}
	detach_from_bound();
	{
		std::lock_guard guard(lock_);
		shutdown_all();
	}
	return Endpoint::close(); // releases the bindings and the domain
}

int RxmEndpoint::getname(void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_EOPBADSTATE;
	size_t room = *addrlen;
	*addrlen = own_name_.size();
	if (room < own_name_.size())
		return -FI_ETOOSMALL;
	if (!addr)
		return -FI_EINVAL;
	memcpy(addr, own_name_.data(), own_name_.size());
	return 0;
}

int RxmEndpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	// Connections are internal to rxm: the application has no CM data to send.
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_CM_DATA_SIZE) {
		if (!optval || !optlen)
			return -FI_EINVAL;
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*static_cast<size_t *>(optval) = 0;
		*optlen = sizeof(size_t);
		return 0;
	}
	std::lock_guard guard(lock_);
	return Endpoint::getopt(level, optname, optval, optlen);
}

int RxmEndpoint::setopt(int level, int optname, const void *optval, size_t optlen)
{
	// The receive path reads FI_OPT_MIN_MULTI_RECV under the lock.
	std::lock_guard guard(lock_);
	return Endpoint::setopt(level, optname, optval, optlen);
}

void RxmEndpoint::progress()
{
	std::lock_guard guard(lock_);
	// Readers copy their endpoint list; detach_from_bound waits for those that copied it
	// before close detached us, so this runs before shutdown_all, never after the free.
	if (!enabled() || !core_cq_)
		return;
	++progress_passes_;
	// The core EQ (connection management) is read on every call while a connection is
	// being set up, and on the first call after a sleep if that call finds no completion
	// (the EQ's fd may have woken the sleeper); otherwise at least every
	// kIdleCoreEqInterval while the core CQ has nothing and every cm_progress_interval
	// while data keeps coming. Reading it costs a system call (the core fabric's
	// progress; verbs: an rdma_get_cm_event): a spinning reader calling in a loop paid
	// that on every empty pass, doubling what a pass costs, and a ping-pong under qemu
	// (each wait longer than the former 50 us) paid 0.8 of them per round trip.
	// A new peer's connection request or a lost connection is still seen within
	// kIdleCoreEqInterval of a spinning reader; a sleeping one wakes on the EQ's fd.
	// An idle pass (this one and the last found nothing) with nothing timed to watch (no
	// connection being set up, no rendezvous read, no sleep just ended) reads the clock
	// only every kIdleClockEvery passes (a tick): the clock read was a fifth of a busy
	// poller's empty pass, and the idle EQ intervals (kIdleCoreEqInterval, a millisecond;
	// shm's kIdleEqInterval, 50 us) are still kept within a few passes. Such a pass
	// changes nothing below.
	// With peers on shm, shm connections being set up are watched on every pass too. A
	// shm peer's death is seen only by a system call (its socket's hangup, read through
	// the shm EQ): a pass that skips the clock leaves shm_check_on_send_ set, and the next
	// send reads the shm EQ first if it is due (shm_check_before_send), so a send after an
	// idle spell does not go into the ring of a peer that died meanwhile when a pass
	// reading the clock would have seen it.
	bool busy = !shm_ && drain_core_cq() > 0;
	bool watch = last_pass_busy_ || conn_timers_active_ || (shm_ && shm_setups_) ||
		     may_have_slept_.load(std::memory_order_relaxed) ||
		     rndv_read_next_ != std::chrono::steady_clock::time_point{};
	bool tick = !busy && !watch && ++idle_passes_ % kIdleClockEvery == 0;
	if (shm_) {
		// Once every peer with a core connection moved to shm, the core connections
		// carry only liveness (the core EQ's, read on ticks) and the odd late completion
		// of what was posted before the move: an idle pass polls the core only on ticks
		// (its empty pass was a fifth of a switched endpoint's). A sleeper's trywait that
		// the core refused asks for it (core_poll_asked); a new core endpoint ends the
		// quiet (core_quiet).
		busy = (watch || tick || !core_quiet() || core_poll_asked()) && drain_core_cq() > 0;
		busy |= shm_drain_cq() > 0; // the shm CQ on every pass, like the core's
	}
	bool clock_due = busy || watch || tick;
	if (shm_ && !clock_due)
		shm_check_on_send_ = true;
	std::chrono::steady_clock::time_point now{}; // (before any deadline when not read)
	if (clock_due) {
		now = std::chrono::steady_clock::now(); // one clock read per pass, shm's too
		if (shm_)
			shm_check_eq(now);
		auto interval = std::chrono::microseconds(params().cm_progress_interval_us);
		// The pass right after a busy one counts as busy: a reader draining its CQ until
		// it finds nothing (Open MPI's MTL) makes that pass between each message and its
		// answer, and the core's engine rests on it (no system call) unless the EQ read
		// adds one.
		if (!busy && !last_pass_busy_)
			interval = std::min<std::chrono::microseconds>(interval, kIdleCoreEqInterval);
		last_pass_busy_ = busy;
		// The first pass after a trywait that allowed a sleep: if it finds no completion,
		// the EQ's fd may be what woke the sleeper. (A plain load first: no atomic
		// exchange on every pass of a busy poller.) A sleeper that saw the core EQ's
		// whole FI_GETWAIT fd not readable as it woke (verbs) read it as good as an
		// empty fi_eq_read would have, without the failed rdma_get_cm_event: that
		// counts as this interval's read. An event arriving later makes the fd readable
		// for the next sleep (level-triggered) or waits for the next interval's read.
		bool slept = may_have_slept_.load(std::memory_order_relaxed) &&
			     may_have_slept_.exchange(false, std::memory_order_relaxed);
		bool eq_seen_quiet = slept && core_eq_wait_.seen_quiet();
		if (eq_seen_quiet)
			last_eq_read_ = now;
		bool eq_may_have_woken = slept && !busy && !eq_seen_quiet;
		if (conn_timers_active_ || eq_may_have_woken || now - last_eq_read_ >= interval) {
			last_eq_read_ = now;
			drain_core_eq();
		}
	}
	// Each piece below runs only when its list or deadline says it has work: a data pass
	// of a ping-pong has none of it, and a call each (a walk over every peer for the
	// queues) made up much of what an empty pass cost.
	if (core_remote_cntr_[0] || core_remote_cntr_[1])
		collect_remote_counts();
	if (!pending_reads_.empty())
		post_pending_reads();
	if (rndv_read_next_ != std::chrono::steady_clock::time_point{})
		expire_rndv_reads(now);
	if (!pending_writes_.empty())
		post_pending_writes();
	if (!backlogged_.empty())
		pump_backlogged();
	// Idle timers only re-arm the timerfd for a changed rendezvous-read deadline.
	if (conn_timers_active_ || (conn_timer_fd_ >= 0 && rndv_read_next_ != conn_timer_armed_))
		run_conn_timers();
	if (coll_)
		coll_progress();
	if (!credit_waiters_.empty()) { // credit updates that found no room earlier
		std::vector<RxmConn *> waiting;
		waiting.swap(credit_waiters_);
		for (RxmConn *conn : waiting) {
			conn->credit_waiting = false;
			send_credit_update(conn);
		}
	}
	if (!retired_.empty() || !closing_.empty() || !shm_retired_.empty() || !shm_closing_.empty())
		close_retired();
	// Closed connections still referred to (e.g. by an unexpected message) are looked at
	// again now and then.
	if (!trim_candidates_.empty() && closing_.empty() && ++trim_tick_ % 1024 == 0)
		trim_conns();
}

size_t RxmEndpoint::drain_core_cq()
{
	size_t handled = progress_and_drain(core_cq_, core_cq_progress_) +
			 taken_in_place_; // rxm_shm_direct.cpp
	taken_in_place_ = 0;
	return handled;
}

size_t RxmEndpoint::progress_and_drain(struct fid_cq *cq, const ofi_cq_progress_ops *ops)
{
	// A busy-polling reader's pass usually finds the core CQ empty (over shm the messages
	// are taken in the ring during the core's progress): the progress entry runs that
	// progress without the read's thunk, fid checks and bookkeeping.
	if (ops && ops->progress(cq) == 0)
		return 0;
	return drain_cq(cq);
}

size_t RxmEndpoint::drain_cq(struct fid_cq *cq)
{
	fi_cq_data_entry comps[16];
	size_t handled = 0;
	for (int round = 0; round < 8; round++) {
		ssize_t n = fi_cq_read(cq, comps, 16);
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(cq, &err, 0) != 1)
				break;
			handled++;
			auto *ctx = static_cast<CoreContext *>(err.op_context);
			int code = err.err ? -err.err : -FI_EIO;
			if (!ctx)
				continue;
			switch (ctx->kind) {
			case CoreOpKind::rx_buffer: {
				// Flushed receive of a closing connection: nothing to repost.
				on_srx_buffer_back(reinterpret_cast<RxBuffer *>(ctx));
				break;
			}
			case CoreOpKind::rx_direct:
				on_direct_recv(static_cast<RecvOp *>(ctx->owner), 0, code);
				break;
			case CoreOpKind::tx_buffer:
				on_tx_buffer_done(reinterpret_cast<TxBuffer *>(ctx), code);
				break;
			case CoreOpKind::rma:
				on_rma_done(static_cast<TxOp *>(ctx->owner), code);
				break;
			case CoreOpKind::rndv_read:
				on_rndv_read_done(static_cast<RecvOp *>(ctx->owner), code);
				break;
			case CoreOpKind::remote_write:
				break; // a peer's write never completes in error here
			}
			continue;
		}
		if (n <= 0)
			break;
		handled += static_cast<size_t>(n);
		// Shared buffers go back to the core once the whole batch is handled (see
		// repost_srx_batch).
		bool outer = batching_srx_reposts_;
		batching_srx_reposts_ = direct_recv_;
		for (ssize_t i = 0; i < n; i++) {
			if (comps[i].flags & FI_REMOTE_WRITE) {
				on_remote_write(comps[i]);
				continue;
			}
			auto *ctx = static_cast<CoreContext *>(comps[i].op_context);
			if (!ctx)
				continue;
			switch (ctx->kind) {
			case CoreOpKind::rx_buffer:
				on_rx_buffer(reinterpret_cast<RxBuffer *>(ctx), comps[i].len);
				break;
			case CoreOpKind::rx_direct:
				on_direct_recv(static_cast<RecvOp *>(ctx->owner), comps[i].len, 0);
				break;
			case CoreOpKind::tx_buffer:
				on_tx_buffer_done(reinterpret_cast<TxBuffer *>(ctx), 0);
				break;
			case CoreOpKind::rma:
				on_rma_done(static_cast<TxOp *>(ctx->owner), 0);
				break;
			case CoreOpKind::rndv_read:
				on_rndv_read_done(static_cast<RecvOp *>(ctx->owner), 0);
				break;
			case CoreOpKind::remote_write:
				break; // FI_REMOTE_WRITE entries went to on_remote_write above
			}
		}
		batching_srx_reposts_ = outer;
		repost_srx_batch();
		if (n < 16)
			break;
	}
	return handled;
}

void RxmEndpoint::drain_core_eq()
{
	alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	for (int i = 0; i < 16; i++) {
		if (!eq_backlog_.empty()) {
			CoreEqEvent ev = std::move(eq_backlog_.front());
			eq_backlog_.pop_front();
			handle_core_eq_event(ev);
			continue;
		}
		uint32_t event = 0;
		ssize_t n = fi_eq_read(core_eq_, &event, buf, sizeof(buf), 0);
		if (n == -FI_EAVAIL) {
			fi_eq_err_entry err{};
			if (fi_eq_readerr(core_eq_, &err, 0) < 0)
				break;
			handle_eq_error(err);
			continue;
		}
		if (n < 0)
			break;
		handle_eq_event(event, reinterpret_cast<fi_eq_cm_entry *>(buf), static_cast<size_t>(n));
	}
}

int cores_trywait(BoundEndpoints &eps)
{
	int rc = 0;
	eps.all_of([&](RxmEndpoint *ep) {
		rc = ep->core_trywait();
		return rc == 0;
	});
	return rc;
}

bool cores_may_sleep(BoundEndpoints &eps)
{
	return eps.all_of([](RxmEndpoint *ep) { return ep->core_may_sleep(); });
}

void cores_wait_fd_handed_out(BoundEndpoints &eps)
{
	eps.for_each([](RxmEndpoint *ep) { ep->hand_out_lower_wait_fds(); });
}

} // namespace rxm
