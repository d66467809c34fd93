#include "prov/tcp/tcp_srx.h"

#include "prov/tcp/tcp_domain.h"
#include "prov/tcp/tcp_endpoint.h"
#include "prov/tcp/tcp_provider.h"

#include <algorithm>

namespace tcp {
namespace {

constexpr uint64_t kSrxRecvFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_RECV;
// A placer's head must arrive with its message's header: well within the stage tail.
constexpr size_t kMaxPlacerHead = 256;

size_t queue_size(const struct fi_rx_attr *attr)
{
	constexpr size_t kMaxQueue = 1 << 16;
	size_t size = attr && attr->size ? attr->size : settings().rx_size;
	return std::min(size, kMaxQueue);
}

} // namespace

TcpSrx::TcpSrx(TcpDomain &domain, const struct fi_rx_attr *attr, void *context)
    : util::FidObject(embedded_fid, FI_CLASS_SRX_CTX, context), domain_(domain),
      op_flags_(attr ? attr->op_flags & kSrxRecvFlags : 0), queue_(queue_size(attr))
{
	fid_ep &pub = embedded_fid.pub;
	pub.fid.ops = util::ops_ptr<TcpSrx, util::make_fi_ops<TcpSrx>>();
	pub.ops = util::ops_ptr<TcpSrx, util::make_ep_ops<TcpSrx>>();
	pub.cm = util::ops_ptr<TcpSrx, util::make_cm_ops<TcpSrx>>();
	pub.msg = util::ops_ptr<TcpSrx, util::make_msg_ops<TcpSrx>>();
	pub.rma = util::ops_ptr<TcpSrx, util::make_rma_ops<TcpSrx>>();
	pub.tagged = util::ops_ptr<TcpSrx, util::make_tagged_ops<TcpSrx>>();
	pub.atomic = util::ops_ptr<TcpSrx, util::make_atomic_ops<TcpSrx>>();
	pub.collective = util::ops_ptr<TcpSrx, util::make_collective_ops<TcpSrx>>();
	domain_.ref();
}

int TcpSrx::close()
{
	if (busy())
		return -FI_EBUSY; // endpoints are still bound
	{
		util::LockGuard guard(domain_.lock());
		while (RxEntry *r = queue_.head()) {
			queue_.pop_head();
			queue_.release(r);
		}
	}
	domain_.unref();
	return util::FidObject::close();
}

ssize_t TcpSrx::post(const struct iovec *iov, size_t count, void *context, uint64_t flags)
{
	if (flags & FI_MULTI_RECV)
		return -FI_EINVAL;
	util::LockGuard guard(domain_.lock());
	int ret = queue_.post(iov, count, context, flags);
	if (ret)
		return ret;
	// Endpoints that stopped for lack of a receive read on.
	while (!queue_.empty() && !starved_.empty()) {
		TcpEndpoint *ep = starved_.front();
		starved_.pop_front();
		ep->resume_rx();
	}
	return 0;
}

int TcpSrx::set_placer(size_t head_len, ofi_rx_place_fn place, void *arg)
{
	if (place && head_len > kMaxPlacerHead)
		return -FI_EINVAL;
	util::LockGuard guard(domain_.lock());
	queue_.placer = place ? RxPlacer{place, arg, head_len} : RxPlacer{};
	return 0;
}

ssize_t TcpSrx::recv(void *buf, size_t len, void *, fi_addr_t, void *context)
{
	iovec iov{buf, len};
	return post(&iov, 1, context, op_flags_);
}

ssize_t TcpSrx::recvv(const struct iovec *iov, void **, size_t count, fi_addr_t, void *context)
{
	return post(iov, count, context, op_flags_);
}

ssize_t TcpSrx::recvmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(kSrxRecvFlags | FI_MULTI_RECV))
		return -FI_EBADFLAGS;
	return post(msg->msg_iov, msg->iov_count, msg->context, flags);
}

ssize_t TcpSrx::cancel(void *context)
{
	util::LockGuard guard(domain_.lock());
	RxEntry *r = queue_.unlink(context, nullptr);
	if (!r)
		return -FI_ENOENT;
	// No endpoint owns the receive, so no CQ can report the cancellation; like a receive
	// never posted it simply disappears.
	queue_.release(r);
	return 0;
}

ssize_t TcpSrx::rx_size_left()
{
	util::LockGuard guard(domain_.lock());
	return static_cast<ssize_t>(queue_.available());
}

void TcpSrx::starved(TcpEndpoint *ep)
{
	if (std::find(starved_.begin(), starved_.end(), ep) == starved_.end())
		starved_.push_back(ep);
}

void TcpSrx::forget(TcpEndpoint *ep)
{
	starved_.erase(std::remove(starved_.begin(), starved_.end(), ep), starved_.end());
}

} // namespace tcp
