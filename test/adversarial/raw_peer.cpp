#include "test/adversarial/raw_peer.h"

#include <rdma/fi_errno.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace adversary {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline)
{
	auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
	return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for 'events' on fd until the deadline: 1 ready, 0 timed out, -errno.
int wait_fd(int fd, short events, Clock::time_point deadline)
{
	for (;;) {
		pollfd p{fd, events, 0};
		int n = poll(&p, 1, remaining_ms(deadline));
		if (n > 0)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

} // namespace

std::vector<uint8_t> rxm_cm_request(const sockaddr *name, socklen_t name_len,
				    uint64_t endpoint_id, uint32_t eager_size)
{
	rxm::CmData cm;
	cm.eager_size = eager_size;
	size_t n = name_len < rxm::kCmMaxNameLen ? name_len : rxm::kCmMaxNameLen;
	std::memcpy(cm.identity.name, name, n);
	cm.identity.name_len = static_cast<uint8_t>(n);
	cm.identity.endpoint_id = endpoint_id;
	std::vector<uint8_t> out(rxm::kCmMaxSize);
	out.resize(rxm::encode_cm_data(cm, out.data()));
	return out;
}

RawPeer::~RawPeer() { close_now(); }

void RawPeer::close_now()
{
	if (fd_ >= 0)
		::close(fd_);
	fd_ = -1;
}

int RawPeer::connect_to(const sockaddr *dst, socklen_t dst_len, const sockaddr *src,
			socklen_t src_len)
{
	close_now();
	fd_ = socket(dst->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd_ < 0)
		return -errno;
	int one = 1;
	setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (src && bind(fd_, src, src_len) != 0)
		return -errno;
	if (connect(fd_, dst, dst_len) != 0)
		return -errno;
	return 0;
}

int RawPeer::send_bytes(const void *buf, size_t len, int timeout_ms)
{
	auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	auto *p = static_cast<const uint8_t *>(buf);
	while (len) {
		ssize_t n = ::send(fd_, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= static_cast<size_t>(n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		int w = wait_fd(fd_, POLLOUT, deadline);
		if (w <= 0)
			return w == 0 ? -FI_ETIMEDOUT : w;
	}
	return 0;
}

int RawPeer::recv_exact(void *buf, size_t len, int timeout_ms)
{
	auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	auto *p = static_cast<uint8_t *>(buf);
	while (len) {
		ssize_t n = ::recv(fd_, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= static_cast<size_t>(n);
			continue;
		}
		if (n == 0)
			return -FI_EIO;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		int w = wait_fd(fd_, POLLIN, deadline);
		if (w <= 0)
			return w == 0 ? -FI_ETIMEDOUT : w;
	}
	return 0;
}

int RawPeer::request(const void *cm, size_t cm_len, int timeout_ms, tcp::CmType *answer,
		     std::vector<uint8_t> *answer_data)
{
	if (cm_len > tcp::kMaxCmData)
		return -FI_EINVAL;
	uint8_t msg[tcp::kCmHeaderSize + tcp::kMaxCmData];
	tcp::encode_cm_header(tcp::CmType::request, static_cast<uint16_t>(cm_len), msg);
	if (cm_len)
		std::memcpy(msg + tcp::kCmHeaderSize, cm, cm_len);
	int ret = send_bytes(msg, tcp::kCmHeaderSize + cm_len, timeout_ms);
	if (ret)
		return ret;
	uint8_t hdr[tcp::kCmHeaderSize];
	ret = recv_exact(hdr, sizeof hdr, timeout_ms);
	if (ret)
		return ret;
	uint16_t data_len = 0;
	if (tcp::decode_cm_header(hdr, answer, &data_len))
		return -FI_EIO;
	std::vector<uint8_t> data(data_len);
	if (data_len && (ret = recv_exact(data.data(), data_len, timeout_ms)))
		return ret;
	if (answer_data)
		*answer_data = std::move(data);
	return 0;
}

int RawPeer::rxm_handshake(const sockaddr *name, socklen_t name_len, uint64_t endpoint_id,
			   int timeout_ms, rxm::CmData *server)
{
	auto cm = rxm_cm_request(name, name_len, endpoint_id);
	tcp::CmType answer;
	std::vector<uint8_t> data;
	int ret = request(cm.data(), cm.size(), timeout_ms, &answer, &data);
	if (ret)
		return ret;
	if (answer != tcp::CmType::accept)
		return -FI_ECONNREFUSED;
	rxm::CmData peer;
	if (rxm::decode_cm_data(data, &peer))
		return -FI_EIO;
	server_conn_id_ = peer.conn_id;
	if (server)
		*server = peer;
	return 0;
}

int RawPeer::send_frame(const tcp::WireHeader &hdr, const void *payload, size_t payload_len)
{
	uint8_t h[tcp::kWireHeaderSize];
	tcp::encode_header(hdr, h);
	int ret = send_bytes(h, sizeof h);
	if (!ret && payload_len)
		ret = send_bytes(payload, payload_len);
	return ret;
}

int RawPeer::send_rxm(rxm::WireHeader hdr, const void *payload, size_t payload_len,
		      size_t send_only)
{
	hdr.payload_len = static_cast<uint32_t>(payload_len);
	if (!hdr.conn_id)
		hdr.conn_id = server_conn_id_;
	std::vector<uint8_t> bytes(rxm::kWireHeaderSize + payload_len);
	rxm::encode_header(hdr, bytes.data());
	if (payload_len)
		std::memcpy(bytes.data() + rxm::kWireHeaderSize, payload, payload_len);
	tcp::WireHeader frame;
	frame.op = tcp::WireOp::msg;
	frame.size = bytes.size();
	uint8_t h[tcp::kWireHeaderSize];
	tcp::encode_header(frame, h);
	int ret = send_bytes(h, sizeof h);
	if (ret)
		return ret;
	size_t n = send_only < bytes.size() ? send_only : bytes.size();
	return n ? send_bytes(bytes.data(), n) : 0;
}

int RawPeer::recv_frame(tcp::WireHeader *hdr, std::vector<uint8_t> *payload, int timeout_ms)
{
	uint8_t h[tcp::kWireHeaderSize];
	int ret = recv_exact(h, sizeof h, timeout_ms);
	if (ret)
		return ret;
	if (tcp::decode_header(h, 1ULL << 32, hdr))
		return -FI_EIO;
	payload->clear();
	if (tcp::op_has_payload(hdr->op) && hdr->size) {
		payload->resize(hdr->size);
		ret = recv_exact(payload->data(), payload->size(), timeout_ms);
	}
	return ret;
}

} // namespace adversary
