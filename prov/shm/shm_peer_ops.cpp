// The shm domain's ops extensions: the kernel's word on who holds the other end of a shm
// connection (shm_peer_ops.h), one-slot messages consumed in the ring
// (util/rx_inplace_ops.h), and framed sends written into it (shm_send_ops.h).
#include "prov/shm/shm_peer_ops.h"
#include "prov/shm/shm_send_ops.h"

#include "prov/shm/shm_domain.h"
#include "prov/shm/shm_endpoint.h"
#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_errno.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace shm {

namespace {

int peer_pid(struct fid_ep *ep, pid_t *pid)
{
	auto *e = util::fid_cast<ShmEndpoint>(ep ? &ep->fid : nullptr, FI_CLASS_EP);
	if (!e || !pid)
		return -FI_EINVAL;
	return e->peer_pid(pid);
}

struct ofi_shm_peer_ops peer_ops = {
	sizeof(struct ofi_shm_peer_ops),
	peer_pid,
};

int set_consumer(struct fid_ep *ep, ofi_rx_inplace_fn consume, void *arg)
{
	auto *e = util::fid_cast<ShmEndpoint>(ep ? &ep->fid : nullptr, FI_CLASS_EP);
	if (!e)
		return -FI_EINVAL;
	return e->set_consumer(consume, arg);
}

struct ofi_rx_inplace_ops inplace_ops = {
	sizeof(struct ofi_rx_inplace_ops),
	set_consumer,
};

ssize_t inject_framed(struct fid_ep *ep, const void *hdr, size_t hdr_len,
		      const struct iovec *payload, size_t count, size_t payload_len)
{
	// (fid_cast_exact: no RTTI walk on the data path)
	auto *e = util::fid_cast_exact<ShmEndpoint>(ep ? &ep->fid : nullptr);
	if (!e)
		return -FI_EINVAL;
	return e->inject_framed(hdr, hdr_len, payload, count, payload_len);
}

struct ofi_framed_send_ops send_ops = {
	sizeof(struct ofi_framed_send_ops),
	inject_framed,
};

} // namespace

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<ShmDomain>().ops_open);

int ShmDomain::ops_open(const char *name, uint64_t flags, void **ops, void *)
{
	if (!name || !ops)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (std::strcmp(name, OFI_SHM_PEER_OPS_NAME) == 0)
		*ops = &peer_ops;
	else if (std::strcmp(name, OFI_RX_INPLACE_OPS_NAME) == 0)
		*ops = &inplace_ops;
	else if (std::strcmp(name, OFI_SHM_SEND_OPS_NAME) == 0 ||
		 std::strcmp(name, OFI_FRAMED_SEND_OPS_NAME) == 0)
		*ops = &send_ops;
	else
		return -FI_ENOSYS;
	return 0;
}

int ShmEndpoint::set_consumer(ofi_rx_inplace_fn consume, void *arg)
{
	util::LockGuard guard(domain().lock());
	consume_ = consume;
	consume_arg_ = consume ? arg : nullptr;
	return 0;
}

int ShmEndpoint::peer_pid(pid_t *pid)
{
	util::LockGuard guard(domain().lock());
	if (sock_ < 0 || state_ != State::connected)
		return -FI_ENOTCONN;
	ucred cred{};
	socklen_t len = sizeof(cred);
	if (getsockopt(sock_, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	if (len != sizeof(cred) || cred.pid <= 0)
		return -FI_EIO;
	*pid = cred.pid;
	return 0;
}

} // namespace shm
