// TcpDomain: one network interface. util::Domain brings CQs, counters, the MR map and the
// progress engine; this adds endpoints and the RMA target check used by connections.
#ifndef PROV_TCP_TCP_DOMAIN_H
#define PROV_TCP_TCP_DOMAIN_H

#include "prov/tcp/tcp_fabric.h"
#include "prov/tcp/tcp_send_flush.h"
#include "prov/tcp/tcp_stall_watch.h"
#include "prov/util/domain.h"

#include <atomic>
#include <cstdint>
#include <vector>

namespace tcp {

class TcpDomain : public util::Domain {
public:
	TcpDomain(TcpFabric &fabric, const struct fi_info *info, void *context);

	int endpoint(struct fi_info *info, struct fid_ep **ep, void *context);
	int srx_context(struct fi_rx_attr *attr, struct fid_ep **rx_ep, void *context);
	// OFI_RX_HOLD_OPS_NAME (prov/util/rx_hold_ops.h): hold/release one endpoint's stream.
	int ops_open(const char *name, uint64_t flags, void **ops, void *context);

	// A peer's RMA access arriving on endpoint 'requester' (its access_id): key (a region
	// bound to another endpoint counts as unknown), [offset, offset+len) inside the region,
	// access rights. 0 with *addr and *serial set; -FI_EINVAL (unknown key, out of range)
	// or -FI_EACCES (no right).
	int remote_access(uint64_t requester, uint64_t key, uint64_t offset, uint64_t len,
			  uint64_t access, uint8_t **addr, uint64_t *serial);
	// domain_attr->auth_key: what this domain's connections present (empty: none).
	const std::vector<uint8_t> &auth_key() const { return auth_key_; }
	// Endpoints holding sends back for the next pass (send coalescing).
	SendFlush &send_flush() { return send_flush_; }
	// Endpoints whose peer left a frame partly received (FI_TCP_RX_STALL_TIMEOUT).
	StallWatch &stall_watch() { return stall_watch_; }
	// Whether endpoints may hold sends back at all: FI_TCP_COALESCE_SENDS and manual data
	// progress (no engine thread that would wait for an fd instead of flushing).
	bool coalesces_sends() const { return coalesce_sends_; }
	// OFI_SEND_HOLD_OPS_NAME (prov/util/send_hold_ops.h): hold back only FI_MORE sends,
	// for a caller (rxm) that cannot promise to come back for every completion it asks.
	void hold_only_more() { hold_only_more_.store(true, std::memory_order_relaxed); }
	bool holds_only_more() const { return hold_only_more_.load(std::memory_order_relaxed); }

private:
	std::vector<uint8_t> auth_key_;
	SendFlush send_flush_;
	StallWatch stall_watch_;
	bool coalesce_sends_ = false;
	std::atomic<bool> hold_only_more_{false};
};

} // namespace tcp

#endif
