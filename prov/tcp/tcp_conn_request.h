// ConnRequest: an incoming connection whose CM request has arrived, handed to the
// application as the `handle` of the FI_CONNREQ info and consumed by fi_endpoint (which
// takes the socket) or fi_reject. It is made only once the request is complete (the CM data
// travels in the event), so it holds just the socket and the connector's address.
#ifndef PROV_TCP_TCP_CONN_REQUEST_H
#define PROV_TCP_TCP_CONN_REQUEST_H

#include "prov/tcp/tcp_socket.h"
#include "prov/util/fid_object.h"

#include <sys/socket.h>
#include <unistd.h>

namespace tcp {

class ConnRequest;

// The passive endpoint tracks the requests it handed out, so closing it closes their sockets.
class ConnRequestOwner {
public:
	virtual ~ConnRequestOwner() = default;
	virtual void forget(ConnRequest *request) = 0;
};

class ConnRequest : public util::FidStorage<struct fid>, public util::FidObject {
public:
	ConnRequest(int fd, const IpAddress &peer)
	    : util::FidObject(embedded_fid, FI_CLASS_CONNREQ, nullptr), fd_(fd), peer_(peer)
	{
	}
	~ConnRequest() override
	{
		if (fd_ >= 0)
			::close(fd_);
	}

	int fd() const { return fd_; }
	// Hands the socket over (to the accepting endpoint).
	int take_fd()
	{
		int fd = fd_;
		fd_ = -1;
		return fd;
	}
	const IpAddress &peer() const { return peer_; }
	void set_owner(ConnRequestOwner *owner) { owner_ = owner; }
	// Called by whoever consumes the request (fi_endpoint, fi_reject) before deleting it.
	void release()
	{
		if (owner_)
			owner_->forget(this);
		owner_ = nullptr;
	}
	struct fid *handle() { return fid(); }

private:
	int fd_;
	IpAddress peer_;
	ConnRequestOwner *owner_ = nullptr;
};

} // namespace tcp

#endif
