// TcpEndpoint: fi_read*/fi_write*/fi_inject_write* argument checks and flag handling.
// Remote addresses are offsets into the target's registered region (no FI_MR_VIRT_ADDR).
#include "prov/tcp/tcp_endpoint.h"

namespace tcp {
namespace {

constexpr uint64_t kRmaFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA |
	FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_FENCE | FI_MORE |
	FI_RMA | FI_READ | FI_WRITE;

} // namespace

ssize_t TcpEndpoint::post_rma(bool is_write, PostArgs &args, const struct fi_rma_iov *rma,
			      size_t rma_count)
{
	if (rma_count != 1 || !rma)
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	int ret = check_can_post();
	if (ret)
		return ret;
	if (is_write && (args.op_flags & FI_INJECT))
		args.copy = true;
	ret = is_write ? conn_.post_write(args, *rma) : conn_.post_read(args, *rma);
	update_registration();
	return ret;
}

namespace {

size_t iov_total(const struct iovec *iov, size_t count)
{
	size_t total = 0;
	for (size_t i = 0; iov && i < count; i++)
		total += iov[i].iov_len;
	return total;
}

} // namespace

ssize_t TcpEndpoint::read(void *buf, size_t len, void *desc, fi_addr_t src_addr,
			  uint64_t addr, uint64_t key, void *context)
{
	iovec iov{buf, len};
	return readv(&iov, &desc, 1, src_addr, addr, key, context);
}

ssize_t TcpEndpoint::readv(const struct iovec *iov, void **, size_t count, fi_addr_t,
			   uint64_t addr, uint64_t key, void *context)
{
	fi_rma_iov rma{addr, iov_total(iov, count), key};
	PostArgs args;
	args.iov = iov;
	args.count = count;
	args.context = context;
	args.op_flags = tx_op_flags();
	return post_rma(false, args, &rma, 1);
}

ssize_t TcpEndpoint::readmsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kRmaFlags)
		return -FI_EBADFLAGS;
	PostArgs args;
	args.iov = msg->msg_iov;
	args.count = msg->iov_count;
	args.context = msg->context;
	args.op_flags = flags & ~(FI_INJECT | FI_REMOTE_CQ_DATA);
	return post_rma(false, args, msg->rma_iov, msg->rma_iov_count);
}

ssize_t TcpEndpoint::write(const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
			   uint64_t addr, uint64_t key, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return writev(&iov, &desc, 1, dest_addr, addr, key, context);
}

ssize_t TcpEndpoint::writev(const struct iovec *iov, void **, size_t count, fi_addr_t,
			    uint64_t addr, uint64_t key, void *context)
{
	fi_rma_iov rma{addr, iov_total(iov, count), key};
	PostArgs args;
	args.iov = iov;
	args.count = count;
	args.context = context;
	args.op_flags = tx_op_flags();
	return post_rma(true, args, &rma, 1);
}

ssize_t TcpEndpoint::writemsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kRmaFlags)
		return -FI_EBADFLAGS;
	PostArgs args;
	args.iov = msg->msg_iov;
	args.count = msg->iov_count;
	args.context = msg->context;
	args.op_flags = flags;
	args.data = msg->data;
	return post_rma(true, args, msg->rma_iov, msg->rma_iov_count);
}

ssize_t TcpEndpoint::inject_write(const void *buf, size_t len, fi_addr_t, uint64_t addr,
				  uint64_t key)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	PostArgs args;
	args.iov = &iov;
	args.count = 1;
	args.op_flags = tx_op_flags();
	args.copy = true;
	args.silent = true;
	return post_rma(true, args, &rma, 1);
}

ssize_t TcpEndpoint::writedata(const void *buf, size_t len, void *, uint64_t data,
			       fi_addr_t, uint64_t addr, uint64_t key, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	PostArgs args;
	args.iov = &iov;
	args.count = 1;
	args.context = context;
	args.op_flags = tx_op_flags() | FI_REMOTE_CQ_DATA;
	args.data = data;
	return post_rma(true, args, &rma, 1);
}

ssize_t TcpEndpoint::inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t,
				      uint64_t addr, uint64_t key)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	PostArgs args;
	args.iov = &iov;
	args.count = 1;
	args.op_flags = tx_op_flags() | FI_REMOTE_CQ_DATA;
	args.data = data;
	args.copy = true;
	args.silent = true;
	return post_rma(true, args, &rma, 1);
}

} // namespace tcp
