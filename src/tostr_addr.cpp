// The layouts read here are those the address formats define (fi_getinfo(3)): sockaddr
// variants, and the fixed binary names of the PSM, IB UD, EFA, OPX and CXI providers.
// Fields are read with memcpy because nothing guarantees the caller's buffer is aligned.
#include "src/tostr_addr.h"

#include <rdma/fabric.h>

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace ofi::tostr {
namespace {

template <typename T>
T field_at(const void *addr, size_t offset)
{
	T value;
	memcpy(&value, static_cast<const char *>(addr) + offset, sizeof value);
	return value;
}

// Offsets inside the socket address structures.
constexpr size_t sa_port_offset = offsetof(sockaddr_in, sin_port);
constexpr size_t sin_addr_offset = offsetof(sockaddr_in, sin_addr);
constexpr size_t sin6_addr_offset = offsetof(sockaddr_in6, sin6_addr);

// struct sockaddr_ib (rdma-core): family, pkey, flowinfo, 16-byte GID, service id,
// service id mask, scope id; all multi-byte fields in network order.
constexpr size_t sib_pkey_offset = 2;
constexpr size_t sib_gid_offset = 8;
constexpr size_t sib_sid_offset = 24;
constexpr size_t sib_scope_offset = 40;

uint16_t family_of(const void *addr)
{
	return field_at<sa_family_t>(addr, offsetof(sockaddr, sa_family));
}

uint16_t port_of(const void *addr)
{
	return ntohs(field_at<uint16_t>(addr, sa_port_offset));
}

// The address bytes are taken where the *format* says they are, but decoded according to
// the family stored in the structure; a family that is not IP yields no text.
bool ip_text(const void *addr, size_t offset, char *text, socklen_t size)
{
	return inet_ntop(family_of(addr), static_cast<const char *>(addr) + offset, text, size);
}

void write_sockaddr_in(TextSink &out, const void *addr)
{
	char ip[INET6_ADDRSTRLEN];
	if (ip_text(addr, sin_addr_offset, ip, sizeof ip))
		out.append_address("fi_sockaddr_in://%s:%u", ip, port_of(addr));
}

void write_sockaddr_in6(TextSink &out, const void *addr)
{
	char ip[INET6_ADDRSTRLEN];
	if (ip_text(addr, sin6_addr_offset, ip, sizeof ip))
		out.append_address("fi_sockaddr_in6://[%s]:%u", ip, port_of(addr));
}

void write_sockaddr_ib(TextSink &out, const void *addr)
{
	char gid[INET6_ADDRSTRLEN];
	if (!inet_ntop(AF_INET6, static_cast<const char *>(addr) + sib_gid_offset, gid, sizeof gid))
		return;
	uint64_t service_id = be64toh(field_at<uint64_t>(addr, sib_sid_offset));
	uint64_t scope_id = be64toh(field_at<uint64_t>(addr, sib_scope_offset));
	// P_Key, the port space from the service id, and the low byte of the scope id: the
	// fields (and widths) the reference output shows.
	unsigned pkey = ntohs(field_at<uint16_t>(addr, sib_pkey_offset));
	unsigned port_space = (service_id >> 16) & 0xfff;
	unsigned port = scope_id & 0xff;
	out.append_address("fi_sockaddr_ib://[%s]:0x%x:0x%x:0x%x", gid, pkey, port_space, port);
}

void write_sockaddr(TextSink &out, const void *addr)
{
	switch (family_of(addr)) {
	case AF_INET:
		write_sockaddr_in(out, addr);
		break;
	case AF_INET6:
		write_sockaddr_in6(out, addr);
		break;
	default:
		break;
	}
}

// IB UD name: GID, then QP number, LID, P_Key and service level.
void write_ib_ud(TextSink &out, const void *addr)
{
	char gid[INET6_ADDRSTRLEN];
	if (!inet_ntop(AF_INET6, addr, gid, sizeof gid))
		return;
	out.append_address("fi_addr_ib_ud://%s:%x/%x/%x/%x", gid, field_at<uint32_t>(addr, 16),
		   field_at<uint16_t>(addr, 20), field_at<uint16_t>(addr, 22),
		   field_at<uint8_t>(addr, 26));
}

// EFA name: GID, then QP number and QKey.
void write_efa(TextSink &out, const void *addr)
{
	char gid[INET6_ADDRSTRLEN];
	if (!inet_ntop(AF_INET6, addr, gid, sizeof gid))
		return;
	out.append_address("fi_addr_efa://[%s]:%u:%u", gid, field_at<uint16_t>(addr, 16),
		   field_at<uint32_t>(addr, 20));
}

unsigned long long word_at(const void *addr, size_t index)
{
	return field_at<uint64_t>(addr, index * sizeof(uint64_t));
}

} // namespace

void write_address(TextSink &out, uint32_t addr_format, const void *addr)
{
	if (!addr) {
		out.append("(null)");
		return;
	}

	switch (addr_format) {
	case FI_SOCKADDR:
		write_sockaddr(out, addr);
		break;
	case FI_SOCKADDR_IN:
		write_sockaddr_in(out, addr);
		break;
	case FI_SOCKADDR_IN6:
		write_sockaddr_in6(out, addr);
		break;
	case FI_SOCKADDR_IB:
		write_sockaddr_ib(out, addr);
		break;
	case FI_ADDR_PSMX:
		out.append_address("fi_addr_psmx://%llx", word_at(addr, 0));
		break;
	case FI_ADDR_PSMX2:
		out.append_address("fi_addr_psmx2://%llx:%llx", word_at(addr, 0), word_at(addr, 1));
		break;
	case FI_ADDR_PSMX3:
		out.append_address("fi_addr_psmx3://%llx:%llx:%llx:%llx", word_at(addr, 0),
			   word_at(addr, 1), word_at(addr, 2), word_at(addr, 3));
		break;
	case FI_ADDR_GNI:
		out.append_address("fi_addr_gni://%llx", word_at(addr, 0));
		break;
	// These names are opaque; only where they live is printed.
	case FI_ADDR_BGQ:
		out.append_address("fi_addr_bgq://%p", addr);
		break;
	case FI_ADDR_MLX:
		out.append_address("fi_addr_mlx://%p", addr);
		break;
	case FI_ADDR_STR:
		out.append_address("%s", static_cast<const char *>(addr));
		break;
	case FI_ADDR_IB_UD:
		write_ib_ud(out, addr);
		break;
	case FI_ADDR_EFA:
		write_efa(out, addr);
		break;
	case FI_ADDR_OPX:
		out.append_address("fi_addr_opx://%016llx", word_at(addr, 0));
		break;
	case FI_ADDR_CXI:
		out.append_address("fi_addr_cxi://0x%08x", field_at<uint32_t>(addr, 0));
		break;
	default:
		// FI_FORMAT_UNSPEC and provider-specific formats have no generic text form.
		break;
	}
}

} // namespace ofi::tostr
