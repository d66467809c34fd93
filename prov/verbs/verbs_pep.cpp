#include "prov/verbs/verbs_pep.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "prov/verbs/verbs_cm_data.h"
#include "prov/verbs/verbs_fabric.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/util/ops_tables.h"

namespace verbs {
namespace {

constexpr int kListenBacklog = 128;

void *dup_sockaddr(const struct sockaddr *sa, size_t *len)
{
	size_t size = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	void *copy = std::malloc(size);
	if (copy)
		std::memcpy(copy, sa, size);
	*len = copy ? size : 0;
	return copy;
}

} // namespace

int copy_out_address(const struct sockaddr *sa, void *addr, size_t *addrlen)
{
	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	size_t size = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	size_t room = *addrlen;
	*addrlen = size;
	if (room < size) {
		if (room)
			std::memcpy(addr, sa, room);
		return -FI_ETOOSMALL;
	}
	std::memcpy(addr, sa, size);
	return 0;
}

VerbsConnRequest::VerbsConnRequest(struct rdma_cm_id *id, uint8_t responder_resources,
				   uint8_t initiator_depth)
	: util::FidObject(embedded_fid, FI_CLASS_CONNREQ, nullptr), id_(id),
	  responder_resources_(responder_resources), initiator_depth_(initiator_depth)
{
	id->context = static_cast<CmEventTarget *>(this);
}

struct rdma_cm_id *VerbsConnRequest::take_id()
{
	struct rdma_cm_id *id = id_;
	delete this;
	return id;
}

void VerbsConnRequest::reject(const void *param, size_t paramlen)
{
	auto wire = encode_cm_data(param, paramlen);
	if (wire)
		rdma_reject(id_, wire->data(), static_cast<uint8_t>(wire->size()));
	else
		rdma_reject(id_, nullptr, 0);
	rdma_destroy_id(take_id());
}

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsPassiveEndpoint>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsPassiveEndpoint>().bind);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsPassiveEndpoint>().control);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<VerbsPassiveEndpoint>().getopt);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<VerbsPassiveEndpoint>().setopt);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<VerbsPassiveEndpoint>().setname);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<VerbsPassiveEndpoint>().getname);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<VerbsPassiveEndpoint>().listen);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<VerbsPassiveEndpoint>().reject);

VerbsPassiveEndpoint::VerbsPassiveEndpoint(VerbsFabric *fabric, void *context)
	: util::FidObject(embedded_fid, FI_CLASS_PEP, context), fabric_(fabric)
{
	using Self = VerbsPassiveEndpoint;
	embedded_fid.pub.fid.ops = util::ops_ptr<Self, util::make_fi_ops<Self>>();
	embedded_fid.pub.ops = util::ops_ptr<Self, util::make_ep_ops<Self>>();
	embedded_fid.pub.cm = util::ops_ptr<Self, util::make_cm_ops<Self>>();
}

int VerbsPassiveEndpoint::open(VerbsFabric *fabric, struct fi_info *info, struct fid_pep **pep,
			       void *context)
{
	if (!info || !pep)
		return -FI_EINVAL;
	if (info->src_addr && info->src_addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	auto *self = new VerbsPassiveEndpoint(fabric, context);
	self->info_ = fi_dupinfo(info);
	if (!self->info_) {
		delete self;
		return -FI_ENOMEM;
	}
	self->name_.sin_family = AF_INET;
	if (info->src_addr)
		std::memcpy(&self->name_, info->src_addr, sizeof(self->name_));
	fabric->ref();
	*pep = &self->embedded_fid.pub;
	return 0;
}

VerbsPassiveEndpoint::~VerbsPassiveEndpoint()
{
	if (id_)
		rdma_destroy_id(id_);
	fi_freeinfo(info_);
}

int VerbsPassiveEndpoint::close()
{
	if (id_) {
		rdma_destroy_id(id_);
		id_ = nullptr;
	}
	if (eq_)
		eq_->unref();
	fabric_->unref();
	return util::FidObject::close();
}

int VerbsPassiveEndpoint::bind(struct fid *bfid, uint64_t flags)
{
	(void)flags;
	auto *eq = util::fid_cast<VerbsEventQueue>(bfid, FI_CLASS_EQ);
	if (!eq)
		return -FI_EINVAL;
	if (eq_ || id_)
		return -FI_EOPBADSTATE;
	eq_ = eq;
	eq_->ref();
	return 0;
}

int VerbsPassiveEndpoint::control(int command, void *arg)
{
	(void)arg;
	return command == FI_BACKLOG ? 0 : -FI_ENOSYS;
}

int VerbsPassiveEndpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*static_cast<size_t *>(optval) = kCmDataMax;
	*optlen = sizeof(size_t);
	return 0;
}

int VerbsPassiveEndpoint::setopt(int level, int optname, const void *optval, size_t optlen)
{
	(void)level, (void)optname, (void)optval, (void)optlen;
	return -FI_ENOPROTOOPT;
}

int VerbsPassiveEndpoint::setname(void *addr, size_t addrlen)
{
	if (id_)
		return -FI_EOPBADSTATE;
	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    static_cast<struct sockaddr *>(addr)->sa_family != AF_INET)
		return -FI_EINVAL;
	std::memcpy(&name_, addr, sizeof(name_));
	return 0;
}

int VerbsPassiveEndpoint::getname(void *addr, size_t *addrlen)
{
	const struct sockaddr *sa = id_ ? rdma_get_local_addr(id_)
					: reinterpret_cast<const struct sockaddr *>(&name_);
	return copy_out_address(sa, addr, addrlen);
}

int VerbsPassiveEndpoint::listen()
{
	if (!eq_)
		return -FI_ENOEQ;
	if (id_)
		return -FI_EOPBADSTATE;
	if (rdma_create_id(eq_->channel(), &id_, static_cast<CmEventTarget *>(this), RDMA_PS_TCP))
		return -errno;
	if (rdma_bind_addr(id_, reinterpret_cast<struct sockaddr *>(&name_)) ||
	    rdma_listen(id_, kListenBacklog)) {
		int err = errno;
		VERBS_WARN(FI_LOG_EP_CTRL, "cannot listen: %s\n", strerror(err));
		rdma_destroy_id(id_);
		id_ = nullptr;
		return err == EADDRINUSE ? -FI_EADDRINUSE : -err;
	}
	return 0;
}

int VerbsPassiveEndpoint::reject(struct fid *handle, const void *param, size_t paramlen)
{
	auto *request = util::fid_cast<VerbsConnRequest>(handle, FI_CLASS_CONNREQ);
	if (!request)
		return -FI_EINVAL;
	if (paramlen > kCmDataMax || (paramlen && !param))
		return -FI_EINVAL;
	request->reject(param, paramlen);
	return 0;
}

struct fi_info *VerbsPassiveEndpoint::connreq_info(struct rdma_cm_id *id, VerbsConnRequest *request)
{
	struct fi_info *info = fi_dupinfo(info_);
	if (!info)
		return nullptr;
	std::free(info->src_addr);
	std::free(info->dest_addr);
	info->src_addr = dup_sockaddr(rdma_get_local_addr(id), &info->src_addrlen);
	info->dest_addr = dup_sockaddr(rdma_get_peer_addr(id), &info->dest_addrlen);
	std::free(info->domain_attr->name);
	info->domain_attr->name = strdup(ibv_get_device_name(id->verbs->device));
	info->handle = request->handle();
	if (!info->src_addr || !info->dest_addr || !info->domain_attr->name) {
		fi_freeinfo(info);
		return nullptr;
	}
	return info;
}

void VerbsPassiveEndpoint::on_cm_event(const struct rdma_cm_event &event, VerbsEventQueue &eq)
{
	if (event.event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		VERBS_INFO(FI_LOG_EP_CTRL, "listener event %s ignored\n", rdma_event_str(event.event));
		return;
	}
	const struct rdma_conn_param &conn = event.param.conn;
	auto data = decode_cm_data(conn.private_data, conn.private_data_len);
	if (!data) {
		VERBS_WARN(FI_LOG_EP_CTRL, "connection request with malformed private data rejected\n");
		rdma_reject(event.id, nullptr, 0);
		// The new id is ours (its request event counts against the listener).
		rdma_destroy_id(event.id);
		return;
	}
	auto *request = new (std::nothrow) VerbsConnRequest(event.id, conn.responder_resources,
							   conn.initiator_depth);
	struct fi_info *info = request ? connreq_info(event.id, request) : nullptr;
	if (!info) {
		if (request)
			request->reject(nullptr, 0);
		else {
			rdma_reject(event.id, nullptr, 0);
			rdma_destroy_id(event.id);
		}
		return;
	}
	eq.push_cm_entry(FI_CONNREQ, fid(), info, *data);
}

} // namespace verbs
