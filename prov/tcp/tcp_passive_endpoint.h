// TcpPassiveEndpoint: a listening socket. Accepted connections are read (the connector's CM
// request) in the fabric's progress engine, then reported as FI_CONNREQ events whose info
// carries a ConnRequest handle.
#ifndef PROV_TCP_TCP_PASSIVE_ENDPOINT_H
#define PROV_TCP_TCP_PASSIVE_ENDPOINT_H

#include "prov/tcp/tcp_conn_request.h"
#include "prov/tcp/tcp_fabric.h"
#include "prov/util/passive_endpoint.h"
#include "prov/util/progress_engine.h"

#include <sys/socket.h>

#include <vector>

namespace tcp {

class TcpPassiveEndpoint : public util::PassiveEndpoint,
			   public util::FdHandler,
			   public ConnRequestOwner {
public:
	TcpPassiveEndpoint(TcpFabric &fabric, const struct fi_info *info, void *context);
	~TcpPassiveEndpoint() override;

	// ---- fi_ops_cm ----
	int listen();
	int getname(void *addr, size_t *addrlen);
	int setname(void *addr, size_t addrlen);
	int reject(struct fid *handle, const void *param, size_t paramlen);
	// ---- fi_ops_ep ----
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);
	// ---- fi_ops ----
	int close() override;

	void on_fd_ready(int fd, uint32_t events) override;
	void forget(ConnRequest *request) override;

private:
	void accept_connections();
	void read_request(ConnRequest *request);
	void drop_request(ConnRequest *request);
	int report_request(ConnRequest *request);

	int listen_fd_ = -1;
	sockaddr_storage addr_{};
	std::vector<ConnRequest *> reading_;   // requests whose CM message is still arriving
	std::vector<ConnRequest *> delivered_; // reported in FI_CONNREQ, not yet consumed
};

} // namespace tcp

#endif
