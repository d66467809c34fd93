// Proof that a pid owns the far end of a connection (see rxm_cma_owner.h). Runs once per
// connection, on its first same-host offer; stack buffers only.
#include "prov/rxm/rxm_cma_owner.h"

#include <rdma/fi_errno.h>

#include <dirent.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rxm {

namespace {

// An IP socket address reduced to what identifies a TCP endpoint: IPv4-mapped IPv6 addresses
// become IPv4 (the kernel keeps such connections in its IPv4 tables).
struct IpEndpoint {
	int family = 0;
	uint8_t addr[16] = {};
	uint16_t port_be = 0;
};

bool to_ip_endpoint(const sockaddr *sa, IpEndpoint *out)
{
	static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (!sa)
		return false;
	sa_family_t family;
	memcpy(&family, &sa->sa_family, sizeof(family)); // the address need not be aligned
	if (family == AF_INET) {
		sockaddr_in in;
		memcpy(&in, sa, sizeof(in));
		out->family = AF_INET;
		memcpy(out->addr, &in.sin_addr, 4);
		out->port_be = in.sin_port;
		return true;
	}
	if (family == AF_INET6) {
		sockaddr_in6 in6;
		memcpy(&in6, sa, sizeof(in6));
		out->port_be = in6.sin6_port;
		if (memcmp(&in6.sin6_addr, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0) {
			out->family = AF_INET;
			memcpy(out->addr, reinterpret_cast<const uint8_t *>(&in6.sin6_addr) + 12, 4);
		} else {
			out->family = AF_INET6;
			memcpy(out->addr, &in6.sin6_addr, 16);
		}
		return true;
	}
	return false;
}

// The address words of an inet_diag_sockid as an IpEndpoint of the given family.
IpEndpoint from_diag(int family, const __be32 (&words)[4], __be16 port)
{
	sockaddr_in6 in6{};
	sockaddr_in in{};
	if (family == AF_INET) {
		in.sin_family = AF_INET;
		memcpy(&in.sin_addr, words, 4);
		in.sin_port = port;
	} else {
		in6.sin6_family = AF_INET6;
		memcpy(&in6.sin6_addr, words, 16);
		in6.sin6_port = port;
	}
	IpEndpoint ep;
	to_ip_endpoint(family == AF_INET ? reinterpret_cast<const sockaddr *>(&in)
					 : reinterpret_cast<const sockaddr *>(&in6),
		       &ep);
	return ep;
}

bool same_endpoint(const IpEndpoint &a, const IpEndpoint &b)
{
	size_t len = a.family == AF_INET ? 4 : 16;
	return a.family == b.family && a.port_be == b.port_be && memcmp(a.addr, b.addr, len) == 0;
}

class Fd {
public:
	explicit Fd(int fd) : fd_(fd) {}
	~Fd()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	int get() const { return fd_; }

private:
	int fd_;
};

} // namespace

int cma_find_tcp_socket(const sockaddr *local, const sockaddr *remote, SocketFacts *facts)
{
	IpEndpoint src, dst;
	if (!to_ip_endpoint(local, &src) || !to_ip_endpoint(remote, &dst) ||
	    src.family != dst.family)
		return -FI_EINVAL;
	Fd sock(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
	if (sock.get() < 0)
		return -errno;
	timeval limit{1, 0}; // the kernel answers at once; this only bounds a broken one
	setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));

	struct {
		nlmsghdr nlh;
		inet_diag_req_v2 req;
	} request{};
	request.nlh.nlmsg_len = sizeof(request);
	request.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	request.nlh.nlmsg_flags = NLM_F_REQUEST; // no NLM_F_DUMP: one exact lookup
	request.nlh.nlmsg_seq = 1;
	request.req.sdiag_family = static_cast<uint8_t>(src.family);
	request.req.sdiag_protocol = IPPROTO_TCP;
	request.req.idiag_states = ~0u;
	request.req.id.idiag_sport = src.port_be;
	request.req.id.idiag_dport = dst.port_be;
	memcpy(request.req.id.idiag_src, src.addr, src.family == AF_INET ? 4 : 16);
	memcpy(request.req.id.idiag_dst, dst.addr, dst.family == AF_INET ? 4 : 16);
	request.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	request.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	sockaddr_nl kernel{};
	kernel.nl_family = AF_NETLINK;
	if (sendto(sock.get(), &request, sizeof(request), 0, reinterpret_cast<sockaddr *>(&kernel),
		   sizeof(kernel)) != static_cast<ssize_t>(sizeof(request)))
		return -errno;

	alignas(nlmsghdr) char reply[4096];
	ssize_t n;
	do
		n = recv(sock.get(), reply, sizeof(reply), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	int len = static_cast<int>(n);
	for (auto *h = reinterpret_cast<nlmsghdr *>(reply); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr)))
				return -FI_EIO;
			int err = static_cast<const nlmsgerr *>(NLMSG_DATA(h))->error;
			return err ? err : -FI_ENOENT;
		}
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
			continue;
		inet_diag_msg msg;
		memcpy(&msg, NLMSG_DATA(h), sizeof(msg));
		// The kernel's lookup falls back to a listener on the port: only the exact
		// established connection counts.
		IpEndpoint got_src = from_diag(msg.idiag_family, msg.id.idiag_src, msg.id.idiag_sport);
		IpEndpoint got_dst = from_diag(msg.idiag_family, msg.id.idiag_dst, msg.id.idiag_dport);
		if (msg.idiag_state != TCP_ESTABLISHED || msg.idiag_inode == 0 ||
		    !same_endpoint(got_src, src) || !same_endpoint(got_dst, dst))
			return -FI_ENOENT;
		facts->inode = msg.idiag_inode;
		facts->uid = msg.idiag_uid;
		return 0;
	}
	return -FI_ENOENT;
}

int cma_process_holds_socket(pid_t pid, uint64_t inode)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", static_cast<int>(pid));
	Fd dir(::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (dir.get() < 0)
		return -errno;
	char wanted[48];
	int wanted_len = snprintf(wanted, sizeof(wanted), "socket:[%" PRIu64 "]", inode);
	alignas(dirent64) char entries[4096];
	for (;;) {
		ssize_t n = getdents64(dir.get(), entries, sizeof(entries));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -FI_ENOENT;
		for (ssize_t off = 0; off < n;) {
			auto *e = reinterpret_cast<dirent64 *>(entries + off);
			off += e->d_reclen;
			if (e->d_name[0] == '.')
				continue;
			char link[64];
			ssize_t len = readlinkat(dir.get(), e->d_name, link, sizeof(link));
			if (len == wanted_len && memcmp(link, wanted, static_cast<size_t>(len)) == 0)
				return 0;
		}
	}
}

namespace {

// The four numbers after "\nKEY:" in a /proc status text; false when absent.
bool status_ids(const char *text, const char *key, unsigned long (&ids)[4])
{
	const char *p = strstr(text, key);
	if (!p)
		return false;
	p += strlen(key);
	for (unsigned long &id : ids) {
		char *end;
		errno = 0;
		id = strtoul(p, &end, 10);
		if (end == p || errno)
			return false;
		p = end;
	}
	return true;
}

} // namespace

int cma_process_not_elevated(pid_t pid, uint32_t uid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", static_cast<int>(pid));
	Fd file(::open(path, O_RDONLY | O_CLOEXEC));
	if (file.get() < 0)
		return -errno;
	char text[8192];
	size_t used = 0;
	for (;;) {
		ssize_t n = ::read(file.get(), text + used, sizeof(text) - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || used + static_cast<size_t>(n) == sizeof(text) - 1) {
			used += static_cast<size_t>(n);
			break;
		}
		used += static_cast<size_t>(n);
	}
	text[used] = '\0';
	unsigned long uids[4], gids[4];
	if (!status_ids(text, "\nUid:", uids) || !status_ids(text, "\nGid:", gids))
		return -FI_EIO;
	for (int i = 0; i < 4; i++)
		if (uids[i] != uid || gids[i] != gids[0])
			return -FI_EPERM;
	if (uid != 0) {
		const char *cap = strstr(text, "\nCapPrm:");
		if (!cap)
			return -FI_EIO;
		if (strtoull(cap + strlen("\nCapPrm:"), nullptr, 16) != 0)
			return -FI_EPERM;
	}
	return 0;
}

int cma_check_socket_owner(pid_t pid, const sockaddr *local, const sockaddr *peer)
{
	// The far end's socket: its local address is our peer address, its remote one ours.
	SocketFacts far_end;
	int ret = cma_find_tcp_socket(peer, local, &far_end);
	if (ret)
		return ret;
	ret = cma_process_holds_socket(pid, far_end.inode);
	if (ret)
		return ret;
	return cma_process_not_elevated(pid, far_end.uid);
}

} // namespace rxm
