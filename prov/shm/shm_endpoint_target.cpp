// ShmEndpoint: the target side of RMA. The peer names memory only by (key, address, length);
// the domain's MR map decides (DESIGN rules 5 and 8): the key must exist and serve this
// endpoint, the range must lie inside the region, the region must grant the access. A
// refused request is answered with the verdict and changes nothing here; the connection stays.
#include "prov/shm/shm_endpoint.h"

#include <cstring>

namespace shm {
namespace {

uint32_t verdict(int ret)
{
	return ret == -FI_EACCES ? FI_EACCES : FI_EINVAL; // unknown key or out of range
}

} // namespace

void ShmEndpoint::start_write(const SlotHeader &h)
{
	void *target = nullptr;
	int ret = shm_domain().mr_map().lookup(h.rma_key, h.rma_addr, h.total, FI_REMOTE_WRITE,
					       &target, access_id(), &incoming_.serial);
	if (ret) {
		incoming_.status = verdict(ret);
		return; // the payload still comes through the ring: it is skipped
	}
	incoming_.dest = static_cast<uint8_t *>(target);
	incoming_.key = h.rma_key;
}

void ShmEndpoint::place_write(const uint8_t *payload, size_t len)
{
	if (incoming_.status != 0 || len == 0)
		return;
	// fi_close(mr) takes the domain lock, as we hold it now: checked before every slot.
	if (!shm_domain().mr_map().alive(incoming_.key, incoming_.serial)) {
		FI_INFO(&provider, FI_LOG_EP_DATA,
			"region closed during a remote write: the rest is discarded\n");
		incoming_.status = FI_EINVAL; // what its key now gets: it no longer exists
		return;
	}
	memcpy(incoming_.dest + incoming_.received, payload, len);
}

void ShmEndpoint::finish_write(const Incoming &w)
{
	TxEntry ack;
	ack.kind = TxKind::ack;
	ack.id = w.id;
	ack.status = w.status;
	responses_.push(ack); // room was checked before the write's first slot was taken
	if (w.status == 0) {
		count_remote(FI_REMOTE_WRITE);
		// Remote CQ data: always reported (it has no posting flags), as tcp does.
		if (w.has_data)
			complete_rx(FI_COMPLETION, remote_write_context(),
				    FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, w.total, nullptr,
				    w.data);
	}
}

void ShmEndpoint::answer_read(const SlotHeader &h)
{
	TxEntry resp;
	resp.kind = TxKind::read_response;
	resp.id = h.id;
	void *source = nullptr;
	int ret = shm_domain().mr_map().lookup(h.rma_key, h.rma_addr, h.total, FI_REMOTE_READ,
					       &source, access_id(), &resp.serial);
	if (ret) {
		resp.status = verdict(ret);
	} else {
		// Copied from the region slot by slot as the ring has room (push_tx), each
		// time after checking that the region is still registered.
		resp.iov[0] = {source, h.total};
		resp.count = 1;
		resp.total = h.total;
		resp.rma_key = h.rma_key;
	}
	responses_.push(resp); // room was checked before the request was taken
}

} // namespace shm
