// The kernel facts behind the same-host proof (prov/rxm/rxm_cma_owner.h) on plain loopback
// sockets: a connection's far end is found by its exact 4-tuple (IPv4 and IPv6), is held by
// this process and not by a child forked before it existed, and a process whose credentials
// differ from the socket's creator is refused.
#include "prov/rxm/rxm_cma_owner.h"
#include "test/adversarial/sh_bystander.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using sh::Bystander;

// The kernel facts on plain sockets: a connection's far end is found by its exact 4-tuple,
// is held by this process, and not by a child forked before it existed.
class LoopbackPair {
public:
	explicit LoopbackPair(int family)
	{
		listener_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_storage addr{};
		socklen_t len;
		if (family == AF_INET) {
			auto *in = reinterpret_cast<sockaddr_in *>(&addr);
			in->sin_family = AF_INET;
			in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			len = sizeof(*in);
		} else {
			auto *in6 = reinterpret_cast<sockaddr_in6 *>(&addr);
			in6->sin6_family = AF_INET6;
			in6->sin6_addr = in6addr_loopback;
			len = sizeof(*in6);
		}
		if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr *>(&addr), len) ||
		    listen(listener_, 4) ||
		    getsockname(listener_, reinterpret_cast<sockaddr *>(&addr), &len))
			return;
		client_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (client_ < 0 || connect(client_, reinterpret_cast<sockaddr *>(&addr), len))
			return;
		server_ = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
		socklen_t l = sizeof(local);
		socklen_t p = sizeof(peer);
		ok = server_ >= 0 &&
		     getsockname(server_, reinterpret_cast<sockaddr *>(&local), &l) == 0 &&
		     getpeername(server_, reinterpret_cast<sockaddr *>(&peer), &p) == 0;
		listen_addr = addr;
	}
	~LoopbackPair()
	{
		for (int fd : {listener_, client_, server_})
			if (fd >= 0)
				close(fd);
	}
	uint64_t inode_of_client() const
	{
		struct stat st {};
		return fstat(client_, &st) == 0 ? st.st_ino : 0;
	}
	int client_fd() const { return client_; }

	bool ok = false;
	sockaddr_storage local{}, peer{}, listen_addr{}; // of the server's accepted socket
private:
	int listener_ = -1, client_ = -1, server_ = -1;
};

void check_far_end(int family)
{
	LoopbackPair pair(family);
	if (!pair.ok)
		GTEST_SKIP() << "no loopback for family " << family;
	auto *local = reinterpret_cast<sockaddr *>(&pair.local);
	auto *peer = reinterpret_cast<sockaddr *>(&pair.peer);
	rxm::SocketFacts facts;
	ASSERT_EQ(rxm::cma_find_tcp_socket(peer, local, &facts), 0);
	EXPECT_EQ(facts.inode, pair.inode_of_client());
	EXPECT_EQ(facts.uid, getuid());
	EXPECT_EQ(rxm::cma_process_holds_socket(getpid(), facts.inode), 0);
	EXPECT_EQ(rxm::cma_check_socket_owner(getpid(), local, peer), 0);
	// Only the exact connection: the kernel's lookup falls back to a listener for a tuple
	// with no connection, and a listener is no far end.
	sockaddr_storage nobody = pair.peer;
	if (family == AF_INET)
		reinterpret_cast<sockaddr_in *>(&nobody)->sin_port = htons(1);
	else
		reinterpret_cast<sockaddr_in6 *>(&nobody)->sin6_port = htons(1);
	EXPECT_EQ(rxm::cma_find_tcp_socket(reinterpret_cast<sockaddr *>(&pair.listen_addr),
					   reinterpret_cast<sockaddr *>(&nobody), &facts),
		  -FI_ENOENT);
	// A connection that does not exist (ports swapped) is not found either.
	EXPECT_EQ(rxm::cma_find_tcp_socket(local, local, &facts), -FI_ENOENT);
}

TEST(ShSocketOwner, FarEndFoundByExactTupleIpv4) { check_far_end(AF_INET); }
TEST(ShSocketOwner, FarEndFoundByExactTupleIpv6) { check_far_end(AF_INET6); }

TEST(ShSocketOwner, ChildForkedBeforeTheSocketDoesNotHoldIt)
{
	Bystander child;
	ASSERT_TRUE(child.ok());
	LoopbackPair pair(AF_INET);
	ASSERT_TRUE(pair.ok);
	auto *local = reinterpret_cast<sockaddr *>(&pair.local);
	auto *peer = reinterpret_cast<sockaddr *>(&pair.peer);
	EXPECT_EQ(rxm::cma_process_holds_socket(child.pid(), pair.inode_of_client()), -FI_ENOENT);
	EXPECT_NE(rxm::cma_check_socket_owner(child.pid(), local, peer), 0);
	EXPECT_NE(rxm::cma_process_holds_socket(0x7ffffff0, pair.inode_of_client()), 0);
}

TEST(ShSocketOwner, ProcessWithOtherCredentialsIsRefused)
{
	EXPECT_EQ(rxm::cma_process_not_elevated(getpid(), getuid()), 0);
	EXPECT_EQ(rxm::cma_process_not_elevated(getpid(), getuid() + 1), -FI_EPERM);
	// pid 1 runs as root; as seen by a non-root socket owner it is more privileged.
	if (getuid() != 0) {
		EXPECT_NE(rxm::cma_process_not_elevated(1, getuid()), 0);
	}
}

} // namespace
