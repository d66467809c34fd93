// TcpEndpoint: fi_send*/fi_recv*/fi_inject* argument checks and flag handling.
#include "prov/tcp/tcp_endpoint.h"

namespace tcp {
namespace {

constexpr uint64_t kTxMsgFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA |
	FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_FENCE | FI_MORE |
	FI_MSG | FI_SEND;
constexpr uint64_t kRxMsgFlags = FI_COMPLETION | FI_MULTI_RECV | FI_MORE | FI_MSG | FI_RECV;

} // namespace

int TcpEndpoint::check_can_post() const
{
	return enabled() ? 0 : -FI_EOPBADSTATE;
}

bool TcpEndpoint::may_hold_send(uint64_t op_flags)
{
	if (!tcp_domain().coalesces_sends())
		return false;
	util::ProgressEngine &engine = domain().engine();
	uint64_t pass = engine.passes();
	bool follows = pass == last_send_pass_;
	last_send_pass_ = pass;
	// An application polling a wait fd without fi_trywait (keep_armed) would never flush.
	if (engine.sleeper_may_wait() || engine.keep_armed())
		return false;
	if (tcp_domain().holds_only_more())
		return (op_flags & FI_MORE) != 0;
	return follows || (op_flags & FI_MORE);
}

ssize_t TcpEndpoint::post_send(PostArgs &args)
{
	util::LockGuard guard(domain().lock());
	int ret = check_can_post();
	if (ret)
		return ret;
	if (args.op_flags & FI_INJECT)
		args.copy = true;
	if (args.op_flags & FI_DELIVERY_COMPLETE)
		args.want_ack = true;
	// Only a send whose completion the application (or rxm) will come back for may wait for
	// the next pass: that read is the pass that sends it. An inject, or a send whose entry
	// selective completion suppresses, may be the last call before the caller waits on
	// something else entirely (a send completed inside rxm's call, then an out-of-band
	// barrier): holding it would stall the peer. FI_MORE is the caller's promise of more.
	bool hold = may_hold_send(args.op_flags);
	args.defer = hold && ((args.op_flags & FI_MORE) ||
			      (!args.silent && tx_entry_wanted(args.op_flags)));
	ret = conn_.post_msg(args);
	if (ret == 0 && conn_.holds_sends() && !tcp_domain().send_flush().add(this))
		conn_.progress_tx();
	update_registration();
	return ret;
}

ssize_t TcpEndpoint::send(const void *buf, size_t len, void *, fi_addr_t, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	PostArgs args;
	args.iov = &iov;
	args.count = 1;
	args.context = context;
	args.op_flags = tx_op_flags();
	return post_send(args);
}

ssize_t TcpEndpoint::sendv(const struct iovec *iov, void **, size_t count, fi_addr_t,
			   void *context)
{
	PostArgs args;
	args.iov = iov;
	args.count = count;
	args.context = context;
	args.op_flags = tx_op_flags();
	return post_send(args);
}

ssize_t TcpEndpoint::sendmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kTxMsgFlags)
		return -FI_EBADFLAGS;
	PostArgs args;
	args.iov = msg->msg_iov;
	args.count = msg->iov_count;
	args.context = msg->context;
	args.op_flags = flags;
	args.data = msg->data;
	return post_send(args);
}

ssize_t TcpEndpoint::inject(const void *buf, size_t len, fi_addr_t)
{
	iovec iov{const_cast<void *>(buf), len};
	PostArgs args;
	args.iov = &iov;
	args.count = 1;
	args.op_flags = tx_op_flags() & ~FI_DELIVERY_COMPLETE;
	args.copy = true;
	args.silent = true;
	return post_send(args);
}

ssize_t TcpEndpoint::senddata(const void *buf, size_t len, void *, uint64_t data, fi_addr_t,
			      void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	PostArgs args;
	args.iov = &iov;
	args.count = 1;
	args.context = context;
	args.op_flags = tx_op_flags() | FI_REMOTE_CQ_DATA;
	args.data = data;
	return post_send(args);
}

ssize_t TcpEndpoint::injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t)
{
	iovec iov{const_cast<void *>(buf), len};
	PostArgs args;
	args.iov = &iov;
	args.count = 1;
	args.op_flags = (tx_op_flags() & ~FI_DELIVERY_COMPLETE) | FI_REMOTE_CQ_DATA;
	args.data = data;
	args.copy = true;
	args.silent = true;
	return post_send(args);
}

ssize_t TcpEndpoint::inject_framed(const void *hdr, size_t hdr_len, const struct iovec *payload,
				   size_t count, size_t payload_len)
{
	if (!hdr || (count && !payload))
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	if (!enabled() || state_ != State::connected)
		return -FI_EAGAIN; // the plain path reports it
	int ret = conn_.send_framed(hdr, hdr_len, payload, count, payload_len);
	// The rest of a frame the socket took in part waits for EPOLLOUT.
	if (ret == 0 && conn_.wants_write())
		update_registration();
	return ret;
}

ssize_t TcpEndpoint::recv(void *buf, size_t len, void *, fi_addr_t, void *context)
{
	iovec iov{buf, len};
	return recvv(&iov, nullptr, 1, FI_ADDR_UNSPEC, context);
}

ssize_t TcpEndpoint::recvv(const struct iovec *iov, void **, size_t count, fi_addr_t,
			   void *context)
{
	util::LockGuard guard(domain().lock());
	int ret = check_can_post();
	if (ret)
		return ret;
	ret = conn_.post_recv(iov, count, context, rx_op_flags());
	update_registration();
	return ret;
}

ssize_t TcpEndpoint::recvmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kRxMsgFlags)
		return -FI_EBADFLAGS;
	util::LockGuard guard(domain().lock());
	int ret = check_can_post();
	if (ret)
		return ret;
	ret = conn_.post_recv(msg->msg_iov, msg->iov_count, msg->context, flags);
	update_registration();
	return ret;
}

} // namespace tcp
