// ShmPassiveEndpoint: a listening AF_UNIX socket under an abstract name (shm_address.h).
// An accepted socket is kept only if SO_PEERCRED shows our own uid; its request (segment
// memfd and doorbell, shm_cm.h) is read in the fabric's progress engine, checked, and
// reported as FI_CONNREQ with a ConnRequest handle. At most kMaxHandshakes sockets may wait
// for their request (over it the oldest goes), so a stalled connector holds one fd at most
// until newer ones push it out.
#ifndef PROV_SHM_SHM_PASSIVE_ENDPOINT_H
#define PROV_SHM_SHM_PASSIVE_ENDPOINT_H

#include "prov/shm/shm_address.h"
#include "prov/shm/shm_conn_request.h"
#include "prov/shm/shm_fabric.h"
#include "prov/util/passive_endpoint.h"
#include "prov/util/progress_engine.h"

#include <vector>

namespace shm {

class ShmPassiveEndpoint : public util::PassiveEndpoint,
			   public util::FdHandler,
			   public ConnRequestOwner {
public:
	ShmPassiveEndpoint(ShmFabric &fabric, const struct fi_info *info, void *context);
	~ShmPassiveEndpoint() override;

	const ShmAddress &address() const { return addr_; }

	int listen();
	int getname(void *addr, size_t *addrlen);
	int setname(void *addr, size_t addrlen);
	int reject(struct fid *handle, const void *param, size_t paramlen);
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);

	void on_fd_ready(int fd, uint32_t events) override;
	void forget(ConnRequest *request) override;

	static constexpr size_t kMaxHandshakes = 64;
	static constexpr int kAcceptsPerCall = 64;

private:
	void accept_connections();
	void drop_handshake(size_t index);
	void read_request(size_t index);
	int report_request(int sock, struct CmMessage &msg);

	ShmAddress addr_;
	int listen_fd_ = -1;
	std::vector<int> handshakes_;          // accepted, request not yet read; oldest first
	std::vector<ConnRequest *> delivered_; // reported, not yet consumed
};

} // namespace shm

#endif
