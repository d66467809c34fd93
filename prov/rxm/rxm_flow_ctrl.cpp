// Credit flow control over cores whose receivers need a posted buffer for every message
// (verbs RC: a send finding none is retried by the hardware and stalls the connection).
// Such a core offers the OFI_FLOW_CTRL_OPS_NAME extension; over it, each side grants the
// peer its msg_rx_size posted buffers in the CM data, counts what it sends (rxm_credits.h,
// the last credit kept for credit updates), and returns the credits of reposted buffers in
// the header of the next message it sends that peer; a message of their own (a credit update)
// goes only when a quarter of the buffers waited for one (a one-way stream). The core enforces
// the same count, so no send is ever posted without a receive.
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_errno.h>

#include <algorithm>

namespace rxm {

uint16_t RxmEndpoint::granted_credits() const
{
	if (!domain_->flow_ctrl())
		return 0;
	return static_cast<uint16_t>(std::min<size_t>(params().msg_rx_size, UINT16_MAX));
}

void RxmEndpoint::start_flow_control(RxmConn *conn)
{
	const ofi_flow_ctrl_ops *ops = domain_->flow_ctrl();
	if (!ops || conn->send_credits.enabled())
		return;
	// Credits come back once a quarter of the buffers were reposted; at least 2 per update,
	// or every update would be answered by one (its own buffer) forever. Buffers reposted
	// before the connection was reported up stay counted.
	conn->credit_return.set_batch(std::max<uint32_t>(2, granted_credits() / 4));
	// A peer granting none (no flow control on its side) buffers on its own.
	if (conn->peer_credit_grant == 0)
		return;
	int ret = ops->enable(conn->core_ep, conn->peer_credit_grant);
	if (ret) {
		RXM_WARN(FI_LOG_EP_CTRL, "core flow control: %s\n", fi_strerror(-ret));
		fail_conn(conn, ret);
		return;
	}
	conn->send_credits = SendCredits(conn->peer_credit_grant);
	send_credit_update(conn);
}

void RxmEndpoint::return_send_credit(RxmConn *conn)
{
	if (conn->send_credits.enabled())
		conn->send_credits.grant(1);
}

void RxmEndpoint::on_buffer_reposted(RxmConn *conn)
{
	if (!domain_->flow_ctrl())
		return;
	conn->credit_return.buffer_reposted();
	send_credit_update(conn);
}

// Sent ahead of queued data (which may itself wait for credits) and allowed to use the last
// credit. Without room now it stays due: the connection joins credit_waiters_, which
// progress retries (only those, not every connection).
void RxmEndpoint::send_credit_update(RxmConn *conn)
{
	if (!conn->credit_return.update_due() || !conn->core_ep ||
	    conn->state != ConnState::connected)
		return;
	auto wait_for_room = [this, conn] {
		if (!conn->credit_waiting) {
			conn->credit_waiting = true;
			credit_waiters_.push_back(conn);
		}
	};
	if (!conn->send_credits.take_for_credit_update()) {
		wait_for_room();
		return;
	}
	TxBuffer *buf = alloc_tx_buffer();
	if (!buf) {
		return_send_credit(conn);
		wait_for_room();
		return;
	}
	WireHeader h;
	h.op = WireOp::credit_update;
	h.offset = conn->credit_return.pending();
	encode_header(h, buf->data);
	buf->len = kWireHeaderSize;
	buf->op = nullptr;
	void *tx_desc = tx_mr_ ? fi_mr_desc(tx_mr_) : nullptr;
	ssize_t ret = fi_send(conn->core_ep, buf->data, buf->len, tx_desc, 0, &buf->core);
	if (ret) {
		free_tx_buffer(buf);
		return_send_credit(conn);
		wait_for_room();
		if (ret != -FI_EAGAIN)
			RXM_WARN(FI_LOG_EP_DATA, "sending a credit update: %s\n",
				 fi_strerror(static_cast<int>(-ret)));
		return;
	}
	buf->conn = conn;
	conn->credit_return.take_pending();
	RXM_INFO(FI_LOG_EP_DATA, "credit update sent: %llu credits\n",
		 static_cast<unsigned long long>(h.offset));
}


bool RxmEndpoint::take_returned_credits(RxmConn *conn, uint64_t n)
{
	const ofi_flow_ctrl_ops *ops = domain_->flow_ctrl();
	// The peer cannot return more than it granted: anything else is a broken peer.
	if (!ops || !conn->send_credits.enabled() || n == 0 ||
	    conn->send_credits.available() + n > conn->peer_credit_grant) {
		RXM_WARN(FI_LOG_EP_DATA, "invalid credit return (%llu credits): closing the "
					 "connection\n", static_cast<unsigned long long>(n));
		fail_conn(conn, -FI_EIO);
		return false;
	}
	int ret = ops->add_credits(conn->core_ep, n);
	if (ret) {
		fail_conn(conn, ret);
		return false;
	}
	conn->send_credits.grant(static_cast<uint32_t>(n));
	return true;
}

void RxmEndpoint::handle_credit_update(RxmConn *conn, const WireHeader &hdr)
{
	if (!take_returned_credits(conn, hdr.offset))
		return;
	send_credit_update(conn);
	pump(conn);
}

} // namespace rxm
