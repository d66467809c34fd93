#include "prov/tcp/tcp_cm_message.h"

#include <rdma/fi_errno.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace tcp {

void encode_cm_header(CmType type, uint16_t data_len, uint8_t out[kCmHeaderSize])
{
	for (int i = 0; i < 4; i++)
		out[i] = static_cast<uint8_t>(kCmMagic >> (8 * i));
	out[4] = kWireVersionForCm;
	out[5] = static_cast<uint8_t>(type);
	out[6] = static_cast<uint8_t>(data_len);
	out[7] = static_cast<uint8_t>(data_len >> 8);
}

int decode_cm_header(const uint8_t in[kCmHeaderSize], CmType *type, uint16_t *data_len)
{
	uint32_t magic = 0;
	for (int i = 0; i < 4; i++)
		magic |= static_cast<uint32_t>(in[i]) << (8 * i);
	if (magic != kCmMagic || in[4] != kWireVersionForCm)
		return -FI_EIO;
	if (in[5] < static_cast<uint8_t>(CmType::request) ||
	    in[5] > static_cast<uint8_t>(CmType::auth_request))
		return -FI_EIO;
	*type = static_cast<CmType>(in[5]);
	*data_len = static_cast<uint16_t>(in[6] | (in[7] << 8));
	if (*data_len > (*type == CmType::auth_request ? kMaxCmMessageData : kMaxCmData))
		return -FI_EIO;
	return 0;
}

int CmReader::read_from(int fd)
{
	for (;;) {
		size_t want = header_done_ ? kCmHeaderSize + data_len_ : kCmHeaderSize;
		if (got_ == want) {
			if (header_done_) {
				// An auth request's key must fit its data and leave at most
				// kMaxCmData of CM data.
				if (type_ == CmType::auth_request &&
				    (data_len_ < 1 || buf_[kCmHeaderSize] == 0 ||
				     buf_[kCmHeaderSize] > kMaxAuthKey ||
				     1u + buf_[kCmHeaderSize] > data_len_ ||
				     data_len_ - 1u - buf_[kCmHeaderSize] > kMaxCmData))
					return -FI_EIO;
				return 1;
			}
			int ret = decode_cm_header(buf_, &type_, &data_len_);
			if (ret)
				return ret;
			header_done_ = true;
			continue;
		}
		ssize_t n = recv(fd, buf_ + got_, want - got_, MSG_DONTWAIT);
		if (n == 0)
			return -FI_ECONNRESET;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return 0;
			return -errno;
		}
		got_ += static_cast<size_t>(n);
	}
}

namespace {

int send_whole(int fd, const uint8_t *buf, size_t total)
{
	ssize_t n;
	do {
		n = send(fd, buf, total, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return static_cast<size_t>(n) == total ? 0 : -FI_EIO;
}

} // namespace

int send_cm_message(int fd, CmType type, const void *data, size_t len)
{
	if (len > kMaxCmData || (len && !data))
		return -FI_EINVAL;
	uint8_t buf[kCmHeaderSize + kMaxCmData];
	encode_cm_header(type, static_cast<uint16_t>(len), buf);
	if (len)
		memcpy(buf + kCmHeaderSize, data, len);
	return send_whole(fd, buf, kCmHeaderSize + len);
}

int send_cm_request(int fd, const uint8_t *key, size_t key_len, const void *data, size_t len)
{
	if (!key_len)
		return send_cm_message(fd, CmType::request, data, len);
	if (len > kMaxCmData || (len && !data) || key_len > kMaxAuthKey || !key)
		return -FI_EINVAL;
	uint8_t buf[kCmHeaderSize + kMaxCmMessageData];
	size_t data_len = 1 + key_len + len;
	encode_cm_header(CmType::auth_request, static_cast<uint16_t>(data_len), buf);
	buf[kCmHeaderSize] = static_cast<uint8_t>(key_len);
	memcpy(buf + kCmHeaderSize + 1, key, key_len);
	if (len)
		memcpy(buf + kCmHeaderSize + 1 + key_len, data, len);
	return send_whole(fd, buf, kCmHeaderSize + data_len);
}

bool auth_keys_match(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
	if (a_len != b_len)
		return false;
	uint8_t diff = 0;
	for (size_t i = 0; i < a_len; i++)
		diff |= static_cast<uint8_t>(a[i] ^ b[i]);
	return diff == 0;
}

} // namespace tcp
