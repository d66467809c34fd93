// TcpEndpoint: an FI_EP_MSG endpoint over one TCP connection.
//
// Lifecycle: idle -> (fi_connect) connecting -> awaiting_reply -> connected, or
// idle with a ConnRequest handle -> (fi_accept) connected; connected -> closed on
// fi_shutdown, peer close or a stream error. The socket is registered in the domain's
// progress engine; the events asked for follow the state (EPOLLOUT only while something waits
// to be sent, no EPOLLIN while incoming data waits for a posted receive).
// Data transfer is done by the Connection; this class checks arguments, applies operation
// flags and turns the Connection's reports into CQ entries, counters and EQ events.
// Every API entry holds the domain lock (the engine's), like progress does.
#ifndef PROV_TCP_TCP_ENDPOINT_H
#define PROV_TCP_TCP_ENDPOINT_H

#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/tcp_domain.h"
#include "prov/tcp/tcp_socket.h"
#include "prov/util/endpoint.h"
#include "prov/util/progress_engine.h"

#include <rdma/fi_rma.h>

#include <sys/socket.h>

#include <memory>

namespace tcp {

class TcpEndpoint : public util::Endpoint,
		    public util::FdHandler,
		    public ConnectionOwner,
		    public SendFlush::Member,
		    public StallWatch::Member {
public:
	TcpEndpoint(TcpDomain &domain, const struct fi_info *info, void *context);
	~TcpEndpoint() override;

	// ---- fi_ops / fi_ops_ep ----
	int close() override;
	int bind(struct fid *bfid, uint64_t flags);  // adds shared receive contexts
	int enable() override;
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);
	ssize_t cancel(void *context);
	ssize_t rx_size_left();
	ssize_t tx_size_left();

	// ---- fi_ops_cm (tcp_endpoint_cm.cpp) ----
	int getname(void *addr, size_t *addrlen);
	int setname(void *addr, size_t addrlen);
	int getpeer(void *addr, size_t *addrlen);
	int connect(const void *addr, const void *param, size_t paramlen);
	int accept(const void *param, size_t paramlen);
	int shutdown(uint64_t flags);

	// ---- fi_ops_msg (tcp_endpoint_msg.cpp) ----
	ssize_t recv(void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context);
	ssize_t recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      void *context);
	ssize_t recvmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t send(const void *buf, size_t len, void *desc, fi_addr_t dest_addr, void *context);
	ssize_t sendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr,
		      void *context);
	ssize_t sendmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t inject(const void *buf, size_t len, fi_addr_t dest_addr);
	ssize_t senddata(const void *buf, size_t len, void *desc, uint64_t data,
			 fi_addr_t dest_addr, void *context);
	ssize_t injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr);
	// prov/util/framed_send_ops.h: hdr then the payload pieces as one message, at once.
	ssize_t inject_framed(const void *hdr, size_t hdr_len, const struct iovec *payload,
			      size_t count, size_t payload_len);

	// ---- fi_ops_rma (tcp_endpoint_rma.cpp) ----
	ssize_t read(void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t addr,
		     uint64_t key, void *context);
	ssize_t readv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      uint64_t addr, uint64_t key, void *context);
	ssize_t readmsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t write(const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
		      uint64_t addr, uint64_t key, void *context);
	ssize_t writev(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr,
		       uint64_t addr, uint64_t key, void *context);
	ssize_t writemsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t inject_write(const void *buf, size_t len, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key);
	ssize_t writedata(const void *buf, size_t len, void *desc, uint64_t data,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context);
	ssize_t inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key);

	// ---- progress and Connection reports ----
	void on_fd_ready(int fd, uint32_t events) override;
	Poll poll_fd(int fd) override;
	// An established stream's poll_fd does what on_fd_ready would (a recv sees the
	// data, the peer's end of stream and errors alike).
	bool may_leave_epoll() override { return state_ == State::connected; }
	void tx_counted(uint64_t cq_flags) override { count_tx(cq_flags); }
	void tx_done(void *context, uint64_t op_flags, uint64_t cq_flags, size_t len,
		     int err) override;
	void rx_done(void *context, uint64_t op_flags, uint64_t cq_flags, void *buf, size_t len,
		     uint64_t data, int err, size_t olen) override;
	void remote_done(uint64_t flags) override;
	int remote_access(uint64_t key, uint64_t offset, uint64_t len, uint64_t access,
			  uint8_t **addr, uint64_t *serial) override;
	bool region_alive(uint64_t key, uint64_t serial) override;
	void connection_lost(int err) override;
	void rx_starved() override;
	// A receive was posted to our shared receive context: read on.
	void resume_rx();
	// rx_hold_ops.h: stop (true) or resume (false) taking messages from this stream.
	int hold_rx(bool held);
	// prov/util/quiet_ops.h: while quiet and nothing of ours is outstanding, the socket is a
	// lazy fd of the engine (no epoll_wait per busy pass for it).
	int set_quiet(bool quiet);
	// prov/util/rx_inplace_ops.h: messages shown to a consumer in the read stage.
	int set_consumer(ofi_rx_inplace_fn consume, void *arg);
	// SendFlush: the sends held back go out (domain lock held).
	void flush_sends() override;
	// StallWatch (tcp_stall_watch.h; domain lock held).
	bool stall_mid_frame() const override
	{
		return state_ == State::connected && conn_.mid_frame();
	}
	uint64_t stall_reads() const override { return conn_.rx_reads(); }
	bool stall_expired() override;
	// A frame left partly received: the domain's stall watch times the peer from now on.
	void watch_stall()
	{
		if (conn_.mid_frame())
			tcp_domain().stall_watch().watch(this);
	}

private:
	enum class State { idle, connecting, awaiting_reply, connected, closed };

	TcpDomain &tcp_domain() { return static_cast<TcpDomain &>(domain()); }
	// Re-registers the socket with the events the current state needs.
	void update_registration();
	// Reads and sends what the socket allows; true if anything was read.
	bool progress_stream();
	void unregister();
	void progress_connect();
	void progress_reply();
	void connect_failed(int err, const void *data, size_t len);
	void become_connected(int fd);
	int check_can_post() const;
	ssize_t post_send(PostArgs &args);
	// Whether a send posted now may wait for the next progress pass: it follows another
	// send of this endpoint posted in the same pass (or says FI_MORE), progress is manual
	// and no thread may be asleep on the engine (it would not flush).
	bool may_hold_send(uint64_t op_flags);
	uint64_t last_send_pass_ = UINT64_MAX;
	ssize_t post_rma(bool is_write, PostArgs &args, const struct fi_rma_iov *rma,
			 size_t rma_count);

	Connection conn_;
	class TcpSrx *srx_ = nullptr;   // shared receive context, when bound
	State state_ = State::idle;
	int cm_fd_ = -1;                // socket while connection management runs
	int registered_fd_ = -1;
	uint32_t registered_events_ = 0;
	bool quiet_ = false;           // set_quiet
	bool registered_lazy_ = false; // what the engine was told for registered_fd_
	void update_laziness();
	// What only an active connect needs (the request to send, the reply being read): on the
	// heap while it runs, so accepted and established endpoints do not carry it.
	struct ConnectState {
		CmReader reply;
		uint8_t request[kMaxCmData];
		size_t request_len = 0;
		unsigned retries = 0; // connects again after a listener dropped us unanswered
	};
	// The listener took our TCP connection and closed it before answering (tcp_endpoint_cm.cpp):
	// connect again. False when out of retries or the new connect fails at once.
	bool retry_connect();
	bool binds_local() const; // connects from local_ (else the kernel picks)
	// Opens, binds (binds_local) and starts a non-blocking connect to peer_: 0 with *fd_out
	// set, -FI_E* when the socket cannot be made, or the errno of a connect that failed at once.
	int start_connect(int *fd_out);
	std::unique_ptr<ConnectState> connecting_;
	// ep_attr->auth_key when the application gave the endpoint its own (rare: otherwise the
	// domain's key is presented, without a copy per endpoint).
	std::unique_ptr<std::vector<uint8_t>> own_auth_key_;
	const std::vector<uint8_t> &auth_key();
	IpAddress local_{};             // bind address (info src_addr or fi_setname)
	IpAddress peer_{};
	bool have_local_ = false;
	bool have_peer_ = false;
	bool from_request_ = false;     // opened from an FI_CONNREQ info, waits for fi_accept
};

} // namespace tcp

#endif
