// ConnRequest: an incoming connection whose request has arrived and been checked (same user,
// a sealed segment of our layout mapped, a real eventfd), handed to the application as the
// `handle` of the FI_CONNREQ info and consumed by fi_endpoint (which takes everything) or
// fi_reject.
#ifndef PROV_SHM_SHM_CONN_REQUEST_H
#define PROV_SHM_SHM_CONN_REQUEST_H

#include "prov/shm/shm_segment.h"
#include "prov/util/fid_object.h"

#include <unistd.h>

#include <memory>
#include <utility>

namespace shm {

class ConnRequest;

class ConnRequestOwner {
public:
	virtual ~ConnRequestOwner() = default;
	virtual void forget(ConnRequest *request) = 0;
};

class ConnRequest : public util::FidStorage<struct fid>, public util::FidObject {
public:
	ConnRequest(int sock, std::unique_ptr<Segment> segment, int peer_bell)
	    : util::FidObject(embedded_fid, FI_CLASS_CONNREQ, nullptr), sock_(sock),
	      segment_(std::move(segment)), peer_bell_(peer_bell)
	{
	}
	~ConnRequest() override
	{
		release();
		drop();
	}

	int sock() const { return sock_; }
	// Hands socket, segment and doorbell over (to the accepting endpoint); sock < 0 when the
	// listener was closed meanwhile.
	int take_sock() { return std::exchange(sock_, -1); }
	std::unique_ptr<Segment> take_segment() { return std::move(segment_); }
	int take_peer_bell() { return std::exchange(peer_bell_, -1); }
	// The listener closes: what the request holds goes now, the handle stays valid.
	void drop()
	{
		if (sock_ >= 0)
			::close(sock_);
		if (peer_bell_ >= 0)
			::close(peer_bell_);
		sock_ = peer_bell_ = -1;
		segment_.reset();
	}
	void set_owner(ConnRequestOwner *owner) { owner_ = owner; }
	void release()
	{
		if (owner_)
			owner_->forget(this);
		owner_ = nullptr;
	}
	struct fid *handle() { return fid(); }

private:
	int sock_;
	std::unique_ptr<Segment> segment_;
	int peer_bell_;
	ConnRequestOwner *owner_ = nullptr;
};

} // namespace shm

#endif
