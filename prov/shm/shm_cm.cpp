#include "prov/shm/shm_cm.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shm {
namespace {

constexpr uint32_t kCmMagic = 0x636d6873; // "shmc"
constexpr uint8_t kCmVersion = 1;
constexpr size_t kHeaderSize = 8;

void put_header(uint8_t *out, uint8_t type, uint16_t len)
{
	uint32_t magic = kCmMagic;
	for (int i = 0; i < 4; i++)
		out[i] = static_cast<uint8_t>(magic >> (8 * i));
	out[4] = kCmVersion;
	out[5] = type;
	out[6] = static_cast<uint8_t>(len);
	out[7] = static_cast<uint8_t>(len >> 8);
}

} // namespace

void CmMessage::close_fds()
{
	for (size_t i = 0; i < fd_count; i++)
		if (fds[i] >= 0)
			::close(fds[i]);
	fd_count = 0;
	fds[0] = fds[1] = -1;
}

size_t fds_for(uint8_t type)
{
	return type == kCmRequest ? 2 : type == kCmAccept ? 1 : 0;
}

int send_cm(int sock, uint8_t type, const void *data, size_t len, const int *fds,
	    size_t fd_count)
{
	if (len > kMaxCmData || fd_count > 2 || (len && !data))
		return -FI_EINVAL;
	uint8_t buf[kHeaderSize + kMaxCmData];
	put_header(buf, type, static_cast<uint16_t>(len));
	if (len)
		memcpy(buf + kHeaderSize, data, len);
	iovec iov{buf, kHeaderSize + len};
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
	if (fd_count) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(fd_count * sizeof(int));
		cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(fd_count * sizeof(int));
		memcpy(CMSG_DATA(c), fds, fd_count * sizeof(int));
	}
	ssize_t n = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -FI_EAGAIN : -errno;
	return static_cast<size_t>(n) == kHeaderSize + len ? 0 : -FI_EIO;
}

int recv_cm(int sock, CmMessage *out)
{
	*out = CmMessage{};
	uint8_t buf[kHeaderSize + kMaxCmData + 1];
	iovec iov{buf, sizeof(buf)};
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -FI_ECONNRESET;
	if (n == 0)
		return -FI_ECONNRESET;
	// Take every descriptor that came, so a malformed message leaks none of them.
	int received[4];
	size_t received_count = 0;
	for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count && received_count < 4; i++)
			memcpy(&received[received_count++], CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
	}
	auto reject = [&]() {
		for (size_t i = 0; i < received_count; i++)
			::close(received[i]);
		return -FI_EIO;
	};
	if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || static_cast<size_t>(n) < kHeaderSize)
		return reject();
	uint32_t magic = buf[0] | buf[1] << 8 | buf[2] << 16 | static_cast<uint32_t>(buf[3]) << 24;
	uint16_t len = static_cast<uint16_t>(buf[6] | buf[7] << 8);
	uint8_t type = buf[5];
	if (magic != kCmMagic || buf[4] != kCmVersion || type < kCmRequest || type > kCmReject ||
	    len > kMaxCmData || static_cast<size_t>(n) != kHeaderSize + len ||
	    received_count != fds_for(type))
		return reject();
	out->type = type;
	out->data_len = len;
	memcpy(out->data, buf + kHeaderSize, len);
	for (size_t i = 0; i < received_count; i++)
		out->fds[i] = received[i];
	out->fd_count = received_count;
	return 1;
}

bool peer_is_same_user(int sock, pid_t *pid)
{
	ucred cred{};
	socklen_t len = sizeof(cred);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred))
		return false;
	if (pid)
		*pid = cred.pid;
	return cred.uid == geteuid();
}

} // namespace shm
