// A listener that takes a TCP connection and closes it before answering (what ours does to
// the oldest unanswered handshakes of one address beyond FI_TCP_MAX_PENDING_CONN_PER_IP, e.g.
// when one process opens many endpoints and connects them all before its first progress
// call) is alive: the connector connects again, a bounded number of times, instead of
// failing the application's connection. A port nobody listens on still fails at once.
// Also the quiet hint (prov/util/quiet_ops.h) rxm gives a connection it moved to shm.
#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/test/tcp_test_pair.h"
#include "prov/util/quiet_ops.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

using tcp_test::EqEvent;
using tcp_test::TcpPair;

namespace {

// Speaks the listener's side of the CM exchange by hand: closes the first `drops`
// connections as soon as they are accepted, then (if `answer`) reads one request and accepts.
class DroppingListener {
public:
	DroppingListener(int drops, bool answer) : drops_(drops), answer_(answer)
	{
		fd_ = socket(AF_INET, SOCK_STREAM, 0);
		sockaddr_in addr{};
		addr.sin_family = AF_INET;
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof(addr);
		if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr *>(&addr), len) != 0 ||
		    listen(fd_, 16) != 0 ||
		    getsockname(fd_, reinterpret_cast<sockaddr *>(&addr_), &len) != 0)
			ADD_FAILURE() << "cannot listen";
		thread_ = std::thread([this] { run(); });
	}
	~DroppingListener()
	{
		stop_ = true;
		thread_.join();
		if (fd_ >= 0)
			close(fd_);
	}
	const sockaddr_in &address() const { return addr_; }
	int accepted() const { return accepted_; }

private:
	// accept with a deadline, so the thread never outlives a failed test
	int accept_one()
	{
		for (int waited = 0; waited < 10000 && !stop_; waited += 50) {
			pollfd p{fd_, POLLIN, 0};
			if (poll(&p, 1, 50) == 1)
				return accept(fd_, nullptr, nullptr);
		}
		return -1;
	}
	void run()
	{
		for (int i = 0; i < drops_; i++) {
			int c = accept_one();
			if (c < 0)
				return;
			accepted_++;
			close(c);
		}
		if (!answer_)
			return;
		int c = accept_one();
		if (c < 0)
			return;
		accepted_++;
		uint8_t header[tcp::kCmHeaderSize];
		size_t got = 0;
		while (got < sizeof(header)) {
			ssize_t n = recv(c, header + got, sizeof(header) - got, 0);
			if (n <= 0)
				break;
			got += static_cast<size_t>(n);
		}
		tcp::CmType type;
		uint16_t len = 0;
		if (got == sizeof(header) && tcp::decode_cm_header(header, &type, &len) == 0 &&
		    type == tcp::CmType::request) {
			uint8_t data[tcp::kMaxCmData];
			if (len == 0 || recv(c, data, len, MSG_WAITALL) == len) {
				uint8_t reply[tcp::kCmHeaderSize];
				tcp::encode_cm_header(tcp::CmType::accept, 0, reply);
				if (send(c, reply, sizeof(reply), MSG_NOSIGNAL) == sizeof(reply))
					answered_ = true;
			}
		}
		// Keep the connection until the connector saw the accept.
		while (!stop_)
			usleep(10000);
		close(c);
	}

	int fd_ = -1;
	sockaddr_in addr_{};
	int drops_;
	bool answer_;
	std::atomic<bool> stop_{false};
	std::atomic<int> accepted_{0};
	std::atomic<bool> answered_{false};
	std::thread thread_;
};

} // namespace

TEST(TcpConnectRetry, ListenerThatDroppedUsUnansweredIsAskedAgain)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	DroppingListener listener(3, true);
	ASSERT_EQ(0, fi_connect(pair.client, &listener.address(), "hi", 2));
	EqEvent ev = pair.wait_eq(pair.client_eq);
	EXPECT_EQ(FI_CONNECTED, ev.event) << "error " << ev.error.err << " after "
					  << listener.accepted() << " connections";
	EXPECT_EQ(4, listener.accepted());
}

TEST(TcpConnectRetry, AListenerThatKeepsDroppingEndsInRefusal)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	DroppingListener listener(100, false);
	ASSERT_EQ(0, fi_connect(pair.client, &listener.address(), nullptr, 0));
	EqEvent ev = pair.wait_eq(pair.client_eq);
	ASSERT_EQ(-FI_EAVAIL, ev.ret);
	EXPECT_EQ(FI_ECONNREFUSED, ev.error.err);
	// Bounded: the first attempt and 8 more, not a loop.
	EXPECT_EQ(9, listener.accepted());
}

// prov/util/quiet_ops.h: a quiet connection's socket is looked at lazily while nothing of
// ours is outstanding, but nothing is lost: the peer's messages still arrive, ours still
// complete, and quiet can be turned off again.
TEST(TcpQuiet, AQuietConnectionStillCarriesTrafficBothWays)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	void *raw = nullptr;
	ASSERT_EQ(0, fi_open_ops(&pair.domain->fid, OFI_QUIET_OPS_NAME, 0, &raw, nullptr));
	auto *ops = static_cast<ofi_quiet_ops *>(raw);
	ASSERT_GE(ops->size, sizeof(ofi_quiet_ops));
	EXPECT_EQ(-FI_EINVAL, ops->set_quiet(nullptr, 1));
	ASSERT_EQ(0, ops->set_quiet(pair.client, 1));
	fi_cq_data_entry entry{};
	for (int round = 0; round < 200; round++) {
		char in[64] = {}, out[64];
		memset(out, 'a' + round % 26, sizeof(out));
		// Into the quiet side, then out of it.
		ASSERT_EQ(0, fi_recv(pair.client, in, sizeof(in), nullptr, 0, in));
		ASSERT_EQ(0, fi_send(pair.server, out, sizeof(out), nullptr, 0, out));
		ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
		ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
		ASSERT_EQ(0, memcmp(in, out, sizeof(in)));
		ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
		ASSERT_EQ(0, fi_send(pair.client, out, sizeof(out), nullptr, 0, out));
		ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
		ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
		ASSERT_EQ(0, memcmp(in, out, sizeof(in)));
		if (round == 100) {
			ASSERT_EQ(0, ops->set_quiet(pair.client, 0));
		}
	}
}
