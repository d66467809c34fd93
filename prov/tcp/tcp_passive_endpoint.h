// TcpPassiveEndpoint: a listening socket. Accepted connections are read (the connector's CM
// request) in the fabric's progress engine, then reported as FI_CONNREQ events whose info
// carries a ConnRequest handle.
//
// Memory in a connection storm (hundreds of peers connecting at once) is kept flat: an
// accepted socket whose request has not arrived yet costs its fd (a reader is allocated only
// for a request that arrives in parts), and accepting pauses while kMaxUnconsumedRequests
// reported requests wait for the application, leaving later connections in the kernel's
// listen queue rather than as objects, infos and events on our heap.
//
// Sockets that never complete their request cannot hold the listener (DESIGN rule 8): each
// is closed after FI_TCP_CM_REQUEST_TIMEOUT, their number is bounded per listener and per
// source IP (over a bound the oldest goes: of that source, or of the source holding most),
// and when accept runs out of fds the oldest handshake is closed to make room, or, with
// none left, the listening socket rests for a moment instead of waking every pass; the
// warning about it is written at most once per interval.
#ifndef PROV_TCP_TCP_PASSIVE_ENDPOINT_H
#define PROV_TCP_TCP_PASSIVE_ENDPOINT_H

#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_accept_guard.h"
#include "prov/tcp/tcp_conn_request.h"
#include "prov/tcp/tcp_fabric.h"
#include "prov/util/passive_endpoint.h"
#include "prov/util/progress_engine.h"

#include <sys/socket.h>

#include <memory>
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
	// Whether a connection request presents this listener's authorization key.
	bool key_accepted(const CmReader &request);
	// ---- fi_ops_ep ----
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);
	// ---- fi_ops ----
	int close() override;

	void on_fd_ready(int fd, uint32_t events) override;
	void forget(ConnRequest *request) override;

	// Reported FI_CONNREQ requests not yet consumed by fi_endpoint/fi_reject beyond which
	// accepting pauses.
	static constexpr size_t kMaxUnconsumedRequests = 4;
	// How long the listening socket rests after accept failed for lack of fds (or
	// memory) with no handshake of ours left to close.
	static constexpr uint64_t kAcceptRetryMs = 100;
	// Accepts per readiness call, so a flood cannot hold one progress pass for long.
	static constexpr int kAcceptsPerCall = 256;

private:
	// An accepted socket whose CM request is still arriving.
	struct Incoming {
		int fd;
		bool registered;                  // in the progress engine (waits for bytes)
		std::unique_ptr<CmReader> partial; // only once part of the request came
		IpAddress source;                 // who connected (the per-IP bound)
		uint64_t deadline_ms;             // closed if the request is not complete by then
	};
	void accept_connections();
	// Makes room for one more handshake from `source` within both bounds.
	void make_room_for(const IpAddress &source);
	void drop_incoming(size_t index, const char *why);
	// Index of the oldest pending handshake of the source with the most pending ones.
	size_t busiest_source_oldest() const;
	void expire_handshakes(uint64_t now_ms);
	void on_accept_failure(int err);
	// Polls the listening socket unless the application or an fd shortage holds it.
	void update_listen_polling();
	// Sets the timer to the nearest handshake deadline or accept retry (or disarms it).
	void arm_timer();
	void on_timer();
	// Reads reading_[index]; true when it is finished (reported or dropped, and removed).
	bool read_request(size_t index);
	int report_request(int fd, const CmReader &reader);
	void resume_accepting();

	int listen_fd_ = -1;
	sockaddr_storage addr_{};
	int timer_fd_ = -1;                    // handshake deadlines and accept retries
	bool accept_paused_ = false;           // listening socket not polled (too many unconsumed)
	bool resting_for_fds_ = false;         // not polled until retry_at_ms_ (accept failed)
	uint64_t retry_at_ms_ = 0;
	RateLimitedWarning accept_warning_{5000};
	std::vector<Incoming> reading_;        // accepted, CM request still arriving; oldest first
	std::vector<ConnRequest *> delivered_; // reported in FI_CONNREQ, not yet consumed
	std::vector<ConnRequest *> unread_;    // of those, the ones whose event close() dropped
};

} // namespace tcp

#endif
