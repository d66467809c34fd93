// A peer that closes as soon as it has our last message: its disconnect request can reach
// us before the acknowledgement of that message (seen on Soft-RoCE under load, where Debian's
// fi_pingpong over verbs;ofi_rxm then failed its final send with FI_ECANCELED although the
// peer had received it). Our answer to the request flushes the QP, so the endpoint must give
// sends in flight their chance to complete first, and still answer in bounded time.
//
// The peer here is raw librdmacm with a QP it drives itself (created with ibv_create_qp,
// not rdma_create_qp): its rdma_disconnect then sends the request without moving that QP
// to the error state, so the order "disconnect request first, acknowledgement later" can be
// produced on purpose. Our send is held back by receiver-not-ready NAKs (the peer has no
// receive posted) until our EQ has read the request; then the peer posts its receive.
// Needs an RDMA device (the test VM): skipped without one.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <infiniband/verbs.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/rdma_cma.h>

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kStepTimeout = std::chrono::seconds(10);

// The passive side, without libfabric.
struct RawPeer {
	struct rdma_event_channel *channel = nullptr;
	struct rdma_cm_id *listen_id = nullptr;
	struct rdma_cm_id *conn_id = nullptr;
	struct ibv_pd *pd = nullptr;
	struct ibv_cq *cq = nullptr;
	struct ibv_qp *qp = nullptr;
	struct ibv_mr *mr = nullptr;
	char buf[64] = {};
	bool established = false;
	bool disconnected = false; // our endpoint's disconnect request or its answer came

	~RawPeer()
	{
		if (qp)
			ibv_destroy_qp(qp);
		if (mr)
			ibv_dereg_mr(mr);
		if (cq)
			ibv_destroy_cq(cq);
		if (pd)
			ibv_dealloc_pd(pd);
		if (conn_id)
			rdma_destroy_id(conn_id);
		if (listen_id)
			rdma_destroy_id(listen_id);
		if (channel)
			rdma_destroy_event_channel(channel);
	}

	bool listen(const struct sockaddr_in &device_addr, struct sockaddr_in *bound)
	{
		channel = rdma_create_event_channel();
		if (!channel || rdma_create_id(channel, &listen_id, nullptr, RDMA_PS_TCP))
			return false;
		int flags = fcntl(channel->fd, F_GETFL);
		if (fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK))
			return false;
		struct sockaddr_in addr = device_addr;
		addr.sin_port = 0;
		if (rdma_bind_addr(listen_id, reinterpret_cast<struct sockaddr *>(&addr)) ||
		    rdma_listen(listen_id, 1))
			return false;
		*bound = *reinterpret_cast<struct sockaddr_in *>(rdma_get_local_addr(listen_id));
		return bound->sin_port != 0;
	}

	// INIT and RTR from rdma_cm's view of the connection, then accept with our QP number.
	bool accept(struct rdma_cm_id *id, const struct rdma_conn_param &request)
	{
		conn_id = id;
		pd = ibv_alloc_pd(id->verbs);
		cq = pd ? ibv_create_cq(id->verbs, 8, nullptr, nullptr, 0) : nullptr;
		mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : nullptr;
		if (!cq || !mr)
			return false;
		struct ibv_qp_init_attr init {};
		init.send_cq = cq;
		init.recv_cq = cq;
		init.qp_type = IBV_QPT_RC;
		init.cap.max_send_wr = 4;
		init.cap.max_recv_wr = 4;
		init.cap.max_send_sge = 1;
		init.cap.max_recv_sge = 1;
		qp = ibv_create_qp(pd, &init);
		if (!qp || !move_qp(IBV_QPS_INIT) || !move_qp(IBV_QPS_RTR))
			return false;
		struct rdma_conn_param param {};
		param.qp_num = qp->qp_num;
		param.responder_resources = request.initiator_depth;
		param.initiator_depth = request.responder_resources;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		return rdma_accept(id, &param) == 0 && move_qp(IBV_QPS_RTS);
	}

	bool move_qp(enum ibv_qp_state state)
	{
		struct ibv_qp_attr attr {};
		int mask = 0;
		attr.qp_state = state;
		if (rdma_init_qp_attr(conn_id, &attr, &mask))
			return false;
		// rdma_cm's RNR NAK timer (655 ms) would hold our send back for longer than the
		// endpoint waits; 0.01 ms lets it through as soon as the receive is posted.
		if (mask & IBV_QP_MIN_RNR_TIMER)
			attr.min_rnr_timer = 1;
		return ibv_modify_qp(qp, &attr, mask) == 0;
	}

	// Handles whatever CM events are there; false on an unexpected one.
	bool progress()
	{
		struct rdma_cm_event *event = nullptr;
		while (rdma_get_cm_event(channel, &event) == 0) {
			bool ok = true;
			switch (event->event) {
			case RDMA_CM_EVENT_CONNECT_REQUEST:
				ok = accept(event->id, event->param.conn);
				break;
			case RDMA_CM_EVENT_ESTABLISHED:
				established = true;
				break;
			case RDMA_CM_EVENT_DISCONNECTED:
				disconnected = true;
				break;
			default:
				ADD_FAILURE() << "raw peer: unexpected " << rdma_event_str(event->event);
				ok = false;
			}
			rdma_ack_cm_event(event);
			if (!ok)
				return false;
		}
		return true;
	}

	bool post_recv()
	{
		struct ibv_sge sge {};
		sge.addr = reinterpret_cast<uintptr_t>(buf);
		sge.length = sizeof(buf);
		sge.lkey = mr->lkey;
		struct ibv_recv_wr wr {}, *bad = nullptr;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		return ibv_post_recv(qp, &wr, &bad) == 0;
	}

	// Sends buf ("reply") to our endpoint; its completion status, or -1 after kStepTimeout.
	int send_reply()
	{
		std::strcpy(buf, "reply");
		struct ibv_sge sge {};
		sge.addr = reinterpret_cast<uintptr_t>(buf);
		sge.length = sizeof(buf);
		sge.lkey = mr->lkey;
		struct ibv_send_wr wr {}, *bad = nullptr;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(qp, &wr, &bad))
			return -1;
		auto deadline = Clock::now() + kStepTimeout;
		struct ibv_wc wc {};
		while (Clock::now() < deadline) {
			int n = ibv_poll_cq(cq, 1, &wc);
			if (n < 0)
				return -1;
			if (n == 1)
				return wc.status;
		}
		return -1;
	}

	// The receive's completion, or false after kStepTimeout.
	bool received(std::string *message)
	{
		auto deadline = Clock::now() + kStepTimeout;
		struct ibv_wc wc {};
		while (Clock::now() < deadline) {
			int n = ibv_poll_cq(cq, 1, &wc);
			if (n < 0)
				return false;
			if (n == 1) {
				if (wc.status != IBV_WC_SUCCESS)
					return false;
				message->assign(buf, strnlen(buf, sizeof(buf)));
				return true;
			}
		}
		return false;
	}
};

class VerbsPeerDisconnect : public ::testing::Test {
protected:
	void SetUp() override
	{
		struct fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_MSG;
		hints->caps = FI_MSG;
		hints->mode = ~0ULL;
		hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
					      FI_MR_PROV_KEY;
		hints->fabric_attr->prov_name = strdup("verbs");
		hints->addr_format = FI_SOCKADDR_IN;
		int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_);
		fi_freeinfo(hints);
		if (ret || !info_ || !info_->src_addr)
			GTEST_SKIP() << "no verbs device here";
		ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
		struct fi_eq_attr eq_attr {};
		eq_attr.wait_obj = FI_WAIT_UNSPEC;
		ASSERT_EQ(fi_eq_open(fabric_, &eq_attr, &eq_, nullptr), 0);
		ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
		struct fi_cq_attr cq_attr {};
		cq_attr.format = FI_CQ_FORMAT_DATA;
		ASSERT_EQ(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), 0);
		ASSERT_EQ(fi_endpoint(domain_, info_, &ep_, nullptr), 0);
		ASSERT_EQ(fi_ep_bind(ep_, &eq_->fid, 0), 0);
		ASSERT_EQ(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), 0);
		ASSERT_EQ(fi_enable(ep_), 0);
		ASSERT_EQ(fi_mr_reg(domain_, message_, sizeof(message_), FI_SEND, 0, 0, 0, &mr_,
				    nullptr), 0);
	}

	void TearDown() override
	{
		for (struct fid *fid : {mr_ ? &mr_->fid : nullptr, ep_ ? &ep_->fid : nullptr,
					cq_ ? &cq_->fid : nullptr, domain_ ? &domain_->fid : nullptr,
					eq_ ? &eq_->fid : nullptr, fabric_ ? &fabric_->fid : nullptr}) {
			if (fid) {
				EXPECT_EQ(fi_close(fid), 0);
			}
		}
		fi_freeinfo(info_);
	}

	// One non-blocking look at our EQ; FI_CONNECTED and FI_SHUTDOWN are remembered.
	void read_eq()
	{
		alignas(8) uint8_t buf[sizeof(struct fi_eq_cm_entry) + 64];
		uint32_t event = 0;
		ssize_t ret = fi_eq_read(eq_, &event, buf, sizeof(buf), 0);
		if (ret == -FI_EAVAIL) {
			struct fi_eq_err_entry err {};
			fi_eq_readerr(eq_, &err, 0);
			ADD_FAILURE() << "EQ error: " << fi_strerror(err.err);
		} else if (ret >= 0 && event == FI_CONNECTED) {
			connected_ = true;
		} else if (ret >= 0 && event == FI_SHUTDOWN) {
			shutdown_ = true;
		}
	}

	void connect()
	{
		struct sockaddr_in device_addr {};
		std::memcpy(&device_addr, info_->src_addr, sizeof(device_addr));
		struct sockaddr_in peer_addr {};
		ASSERT_TRUE(peer_.listen(device_addr, &peer_addr));
		ASSERT_EQ(fi_connect(ep_, &peer_addr, nullptr, 0), 0);
		auto deadline = Clock::now() + kStepTimeout;
		while (!(connected_ && peer_.established) && Clock::now() < deadline) {
			read_eq();
			ASSERT_TRUE(peer_.progress());
		}
		ASSERT_TRUE(connected_ && peer_.established);
	}

	// Connects ep_ to the raw peer and posts one send the peer has no receive for.
	void connect_and_send()
	{
		connect();
		if (HasFatalFailure())
			return;
		std::strcpy(message_, "last");
		ASSERT_EQ(fi_send(ep_, message_, sizeof(message_), fi_mr_desc(mr_), 0, message_), 0);
		// Held by receiver-not-ready NAKs: no completion yet.
		struct fi_cq_data_entry entry {};
		auto until = Clock::now() + std::chrono::milliseconds(50);
		while (Clock::now() < until)
			ASSERT_EQ(fi_cq_read(cq_, &entry, 1), -FI_EAGAIN);
	}

	// The peer's disconnect request, then our EQ read for `look` (it must not answer yet
	// while the send is in flight, or the send is flushed).
	void peer_disconnects(std::chrono::milliseconds look)
	{
		ASSERT_EQ(rdma_disconnect(peer_.conn_id), 0);
		auto until = Clock::now() + look;
		while (Clock::now() < until && !shutdown_) {
			read_eq();
			ASSERT_TRUE(peer_.progress());
		}
	}

	// Our send's completion: 0, or the error it ended with.
	int send_result()
	{
		auto deadline = Clock::now() + kStepTimeout;
		struct fi_cq_data_entry entry {};
		while (Clock::now() < deadline) {
			ssize_t ret = fi_cq_read(cq_, &entry, 1);
			if (ret == 1) {
				EXPECT_EQ(entry.op_context, message_);
				return 0;
			}
			if (ret == -FI_EAVAIL) {
				struct fi_cq_err_entry err {};
				EXPECT_EQ(fi_cq_readerr(cq_, &err, 0), 1);
				EXPECT_EQ(err.op_context, message_);
				return err.err;
			}
			read_eq();
		}
		return -FI_ETIMEDOUT;
	}

	// FI_SHUTDOWN within kStepTimeout (a hang guard, not a timing target).
	bool wait_shutdown()
	{
		auto deadline = Clock::now() + kStepTimeout;
		while (!shutdown_ && Clock::now() < deadline) {
			read_eq();
			EXPECT_TRUE(peer_.progress());
		}
		return shutdown_;
	}

	struct fi_info *info_ = nullptr;
	struct fid_fabric *fabric_ = nullptr;
	struct fid_eq *eq_ = nullptr;
	struct fid_domain *domain_ = nullptr;
	struct fid_cq *cq_ = nullptr;
	struct fid_ep *ep_ = nullptr;
	struct fid_mr *mr_ = nullptr;
	char message_[16] = {};
	bool connected_ = false;
	bool shutdown_ = false;
	RawPeer peer_;
};

TEST_F(VerbsPeerDisconnect, SendAcknowledgedAfterTheDisconnectRequestCompletes)
{
	connect_and_send();
	if (HasFatalFailure())
		return;
	// Long enough for the request to reach our EQ, shorter than the endpoint's wait.
	peer_disconnects(std::chrono::milliseconds(150));
	if (HasFatalFailure())
		return;
	EXPECT_FALSE(shutdown_) << "the disconnect was answered (and the QP flushed) with a send in flight";
	ASSERT_TRUE(peer_.post_recv());
	EXPECT_EQ(send_result(), 0) << "the send the peer received must not fail";
	std::string received;
	ASSERT_TRUE(peer_.received(&received));
	EXPECT_EQ(received, "last");
	// The answer follows once nothing is in flight: the peer learns it, we get FI_SHUTDOWN.
	EXPECT_TRUE(wait_shutdown());
	auto deadline = Clock::now() + kStepTimeout;
	while (!peer_.disconnected && Clock::now() < deadline)
		ASSERT_TRUE(peer_.progress());
	EXPECT_TRUE(peer_.disconnected);
}

TEST_F(VerbsPeerDisconnect, SendNeverAcknowledgedIsFlushedInBoundedTime)
{
	connect_and_send();
	if (HasFatalFailure())
		return;
	peer_disconnects(std::chrono::milliseconds(0));
	if (HasFatalFailure())
		return;
	// The peer never posts a receive: the answer comes anyway, and the send is flushed.
	EXPECT_TRUE(wait_shutdown());
	EXPECT_EQ(send_result(), FI_ECANCELED);
}

} // namespace

namespace {

// The other side of the same problem: closing while the peer may still wait for the
// acknowledgement of a message we received. The disconnect request must leave while our QP
// still answers, and the QP may only be flushed once the peer has replied: here the peer,
// having seen the request, still sends a message, which must be acknowledged.
TEST_F(VerbsPeerDisconnect, ClosingKeepsTheQpAnsweringUntilThePeerReplies)
{
	connect();
	if (HasFatalFailure())
		return;
	char inbox[64] = {};
	struct fid_mr *inbox_mr = nullptr;
	ASSERT_EQ(fi_mr_reg(domain_, inbox, sizeof(inbox), FI_RECV, 0, 0, 0, &inbox_mr, nullptr), 0);
	ASSERT_EQ(fi_recv(ep_, inbox, sizeof(inbox), fi_mr_desc(inbox_mr), 0, inbox), 0);
	std::atomic<int> close_ret{1};
	std::thread closer([&] { close_ret = fi_close(&ep_->fid); });
	auto deadline = Clock::now() + kStepTimeout;
	while (!peer_.disconnected && Clock::now() < deadline)
		ASSERT_TRUE(peer_.progress());
	EXPECT_TRUE(peer_.disconnected) << "no disconnect request from the closing endpoint";
	EXPECT_EQ(peer_.send_reply(), IBV_WC_SUCCESS)
		<< "the closing endpoint's QP stopped answering before the peer replied";
	ASSERT_EQ(rdma_disconnect(peer_.conn_id), 0);
	closer.join();
	ep_ = nullptr;
	EXPECT_EQ(close_ret.load(), 0);
	EXPECT_EQ(fi_close(&inbox_mr->fid), 0);
}

} // namespace
