// libFuzzer target: the tcp connection-management reader. The bytes a connecting peer sends
// are written into one end of a socketpair and CmReader assembles them from the other end,
// exactly as on a fresh connection; it must stop at kMaxCmData of CM data (a request with an
// authorization key may add the key and its length byte) and never overrun its buffer.
#include "prov/tcp/tcp_cm_message.h"

#include <rdma/fi_errno.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	// The header decoder alone, on an exact-size copy.
	if (size >= tcp::kCmHeaderSize) {
		std::vector<uint8_t> header(data, data + tcp::kCmHeaderSize);
		tcp::CmType type;
		uint16_t len = 0;
		size_t limit = header[5] == static_cast<uint8_t>(tcp::CmType::auth_request)
				       ? tcp::kMaxCmMessageData
				       : tcp::kMaxCmData;
		if (tcp::decode_cm_header(header.data(), &type, &len) == 0 && len > limit)
			abort();
	}
	int fds[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds))
		return 0;
	if (size && write(fds[0], data, size) != static_cast<ssize_t>(size)) {
		close(fds[0]);
		close(fds[1]);
		return 0;
	}
	close(fds[0]);  // the peer hangs up after its bytes
	tcp::CmReader reader;
	int ret = 0;
	for (int i = 0; i < 64 && ret == 0; i++)
		ret = reader.read_from(fds[1]);
	if (ret == 1 && (reader.data_len() > tcp::kMaxCmData ||
			 reader.key_len() > tcp::kMaxAuthKey))
		abort();
	if (ret == 0)
		abort();  // a closed peer must end the read with an error, not "need more"
	close(fds[1]);
	return 0;
}
