// Hostile or unusual peers and settings through the public API: garbage instead of a CM
// request, garbage on an established stream, selective completions, automatic progress.
#include "prov/tcp/test/tcp_test_pair.h"
#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_passive_endpoint.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/tcp/tcp_wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using tcp_test::EqEvent;
using tcp_test::TcpPair;

namespace {

// A plain socket connected to the pair's listener.
int raw_connect(const TcpPair &pair)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, reinterpret_cast<const sockaddr *>(pair.listen_addr.data()),
		    static_cast<socklen_t>(pair.listen_addr.size())) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

} // namespace

TEST(TcpRobustness, GarbageInsteadOfCmRequestIsDropped)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	int fd = raw_connect(pair);
	ASSERT_GE(fd, 0);
	char junk[64];
	memset(junk, 0x41, sizeof(junk));
	ASSERT_EQ(static_cast<ssize_t>(sizeof(junk)), write(fd, junk, sizeof(junk)));
	EqEvent ev = pair.wait_eq(pair.server_eq, 300);
	EXPECT_EQ(-FI_EAGAIN, ev.ret);   // no FI_CONNREQ for that
	char c;
	EXPECT_LE(read(fd, &c, 1), 0);   // the listener closed (or reset) it
	close(fd);
	// The listener still serves real clients.
	ASSERT_TRUE(pair.connect("after garbage"));
}

TEST(TcpRobustness, CmRequestArrivingInPiecesIsAssembled)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	int fd = raw_connect(pair);
	ASSERT_GE(fd, 0);
	const char data[] = "sent in three parts";
	uint8_t request[tcp::kCmHeaderSize + sizeof(data)];
	tcp::encode_cm_header(tcp::CmType::request, sizeof(data), request);
	memcpy(request + tcp::kCmHeaderSize, data, sizeof(data));
	// Part of the header, then the rest of it with some data, then the rest of the data,
	// each after the listener had a chance to read what was there.
	size_t cuts[] = {0, 3, tcp::kCmHeaderSize + 5, sizeof(request)};
	for (int i = 0; i < 3; i++) {
		ssize_t len = static_cast<ssize_t>(cuts[i + 1] - cuts[i]);
		ASSERT_EQ(len, write(fd, request + cuts[i], static_cast<size_t>(len)));
		if (i < 2) {
			EXPECT_EQ(-FI_EAGAIN, pair.wait_eq(pair.server_eq, 50).ret);
		}
	}
	EqEvent req = pair.wait_eq(pair.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	EXPECT_EQ(std::string(data, sizeof(data)), std::string(req.data.begin(), req.data.end()));
	ASSERT_EQ(0, fi_reject(pair.pep, req.info->handle, nullptr, 0));
	fi_freeinfo(req.info);
	close(fd);
}

// Many connectors at once: the listener hands the application only a few requests at a time
// (the others wait, established, in the kernel's listen queue) and goes on accepting as the
// application consumes them, so every connector is answered.
TEST(TcpRobustness, ConnectionStormIsReportedAsRequestsAreConsumed)
{
	constexpr size_t kConnectors = 3 * tcp::TcpPassiveEndpoint::kMaxUnconsumedRequests;
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	std::vector<int> fds;
	uint8_t request[tcp::kCmHeaderSize + 1];
	for (size_t i = 0; i < kConnectors; i++) {
		int fd = raw_connect(pair);
		ASSERT_GE(fd, 0);
		fds.push_back(fd);
		timeval limit{5, 0}; // a missing answer fails the read below instead of hanging
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
		tcp::encode_cm_header(tcp::CmType::request, 1, request);
		request[tcp::kCmHeaderSize] = static_cast<uint8_t>(i);
		ASSERT_EQ(static_cast<ssize_t>(sizeof(request)), write(fd, request, sizeof(request)));
	}
	// Nothing consumed yet: only the first few are reported.
	std::vector<EqEvent> pending;
	for (EqEvent ev; (ev = pair.wait_eq(pair.server_eq, 200)).ret > 0;) {
		ASSERT_EQ(FI_CONNREQ, ev.event);
		pending.push_back(ev);
	}
	EXPECT_EQ(tcp::TcpPassiveEndpoint::kMaxUnconsumedRequests, pending.size());
	// Rejecting them lets the rest through; each connector gets its answer.
	std::vector<bool> seen(kConnectors);
	size_t answered = 0;
	while (answered < kConnectors) {
		if (pending.empty()) {
			EqEvent ev = pair.wait_eq(pair.server_eq);
			ASSERT_EQ(FI_CONNREQ, ev.event) << answered << " answered";
			pending.push_back(ev);
		}
		EqEvent req = pending.back();
		pending.pop_back();
		ASSERT_EQ(1u, req.data.size());
		ASSERT_LT(req.data[0], kConnectors);
		EXPECT_FALSE(seen[req.data[0]]);
		seen[req.data[0]] = true;
		ASSERT_EQ(0, fi_reject(pair.pep, req.info->handle, nullptr, 0));
		fi_freeinfo(req.info);
		answered++;
	}
	for (int fd : fds) {
		uint8_t reply[tcp::kCmHeaderSize];
		ASSERT_EQ(static_cast<ssize_t>(sizeof(reply)), read(fd, reply, sizeof(reply)));
		tcp::CmType type;
		uint16_t len;
		ASSERT_EQ(0, tcp::decode_cm_header(reply, &type, &len));
		EXPECT_EQ(tcp::CmType::reject, type);
		close(fd);
	}
}

TEST(TcpRobustness, GarbageOnEstablishedStreamShutsDownThatConnection)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	int fd = raw_connect(pair);
	ASSERT_GE(fd, 0);
	uint8_t request[tcp::kCmHeaderSize];
	tcp::encode_cm_header(tcp::CmType::request, 0, request);
	ASSERT_EQ(static_cast<ssize_t>(sizeof(request)), write(fd, request, sizeof(request)));
	EqEvent req = pair.wait_eq(pair.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	fid_ep *ep = nullptr;
	ASSERT_EQ(0, fi_endpoint(pair.domain, req.info, &ep, nullptr));
	fi_freeinfo(req.info);
	ASSERT_EQ(0, fi_ep_bind(ep, &pair.server_eq->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &pair.server_cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	char in[16];
	ASSERT_EQ(0, fi_recv(ep, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(0, fi_accept(ep, nullptr, 0));
	EXPECT_EQ(FI_CONNECTED, pair.wait_eq(pair.server_eq).event);
	uint8_t reply[tcp::kCmHeaderSize];
	ASSERT_EQ(static_cast<ssize_t>(sizeof(reply)), read(fd, reply, sizeof(reply)));
	// A header with an unknown op and an absurd size.
	uint8_t junk[48];
	memset(junk, 0xff, sizeof(junk));
	junk[0] = 1;
	ASSERT_EQ(static_cast<ssize_t>(sizeof(junk)), write(fd, junk, sizeof(junk)));
	EqEvent ev = pair.wait_eq(pair.server_eq);
	EXPECT_EQ(FI_SHUTDOWN, ev.event);
	EXPECT_EQ(&ep->fid, ev.fid);
	// The posted receive was not filled with the garbage: it came back cancelled.
	fi_cq_data_entry entry;
	fi_cq_err_entry err{};
	ASSERT_EQ(-FI_EAVAIL, pair.wait_cq(pair.server_cq, &entry, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(in, err.op_context);
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&ep->fid, in));
	close(fd);
	fi_close(&ep->fid);
}

// Replaces the pair's client by one whose CQ binding is selective for both directions.
static void open_selective_client(TcpPair &pair)
{
	fi_close(&pair.client->fid);
	pair.client = nullptr;
	fi_info *h = fi_dupinfo(pair.hints);
	h->dest_addr = malloc(pair.listen_addr.size());
	memcpy(h->dest_addr, pair.listen_addr.data(), pair.listen_addr.size());
	h->dest_addrlen = pair.listen_addr.size();
	fi_info *ci = nullptr;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &ci));
	fi_freeinfo(h);
	ASSERT_EQ(0, fi_endpoint(pair.domain, ci, &pair.client, nullptr));
	fi_freeinfo(ci);
	ASSERT_EQ(0, fi_ep_bind(pair.client, &pair.client_eq->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(pair.client, &pair.client_cq->fid,
				FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
	ASSERT_EQ(0, fi_enable(pair.client));
}

TEST(TcpRobustness, SelectiveCompletionReportsOnlyFlaggedOperations)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_NO_FATAL_FAILURE(open_selective_client(pair));
	ASSERT_TRUE(pair.connect());

	char in[2][8];
	ASSERT_EQ(0, fi_recv(pair.server, in[0], 8, nullptr, 0, in[0]));
	ASSERT_EQ(0, fi_recv(pair.server, in[1], 8, nullptr, 0, in[1]));
	ASSERT_EQ(0, fi_send(pair.client, "quiet", 6, nullptr, 0, in));   // no FI_COMPLETION
	char loud[] = "loud";
	iovec iov{loud, sizeof(loud)};
	fi_msg msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.context = loud;
	ASSERT_EQ(0, fi_sendmsg(pair.client, &msg, FI_COMPLETION));
	fi_cq_data_entry entry;
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(loud, entry.op_context);
	EXPECT_TRUE(pair.cq_stays_empty(pair.client_cq));
}

// fi_endpoint(3): under FI_SELECTIVE_COMPLETION a receive without FI_COMPLETION writes no
// entry, also when the message carried remote CQ data (only RMA writes with data, which
// consume no posted receive, are always reported).
TEST(TcpRobustness, SelectiveReceiveWithoutCompletionStaysQuietForCqData)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_NO_FATAL_FAILURE(open_selective_client(pair));
	ASSERT_TRUE(pair.connect());
	char quiet[8] = {}, loud[8] = {};
	ASSERT_EQ(0, fi_recv(pair.client, quiet, sizeof(quiet), nullptr, 0, quiet));
	iovec iov{loud, sizeof(loud)};
	fi_msg msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.context = loud;
	ASSERT_EQ(0, fi_recvmsg(pair.client, &msg, FI_COMPLETION));
	ASSERT_EQ(0, fi_senddata(pair.server, "one", 4, nullptr, 0x1111, 0, nullptr));
	ASSERT_EQ(0, fi_senddata(pair.server, "two", 4, nullptr, 0x2222, 0, nullptr));
	fi_cq_data_entry entry{};
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(loud, entry.op_context);
	EXPECT_TRUE(entry.flags & FI_REMOTE_CQ_DATA);
	EXPECT_EQ(0x2222u, entry.data);
	EXPECT_STREQ("one", quiet);
	EXPECT_STREQ("two", loud);
	EXPECT_TRUE(pair.cq_stays_empty(pair.client_cq));
}

TEST(TcpRobustness, AutoProgressMovesDataWithoutPolling)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open(FI_WAIT_NONE, FI_PROGRESS_AUTO));
	EXPECT_EQ(FI_PROGRESS_AUTO, pair.info->domain_attr->data_progress);
	ASSERT_TRUE(pair.connect());
	// Nobody progresses: the domain's progress thread must land the data and complete the
	// receive. fi_cq_read, fi_trywait and counters all progress themselves, so the check
	// uses fi_cq_readerr, which only looks at the queue (under the CQ lock the progress
	// thread takes too, so reading the buffer after it is not a race): the 4-byte receive
	// of a 5-byte message completes in error (FI_ETRUNC) with the first 4 bytes placed.
	char in[8] = {};
	ASSERT_EQ(0, fi_recv(pair.server, in, 4, nullptr, 0, in));
	ASSERT_EQ(0, fi_send(pair.client, "autoX", 5, nullptr, 0, nullptr));
	fi_cq_err_entry err{};
	ssize_t got = -FI_EAGAIN;
	for (int i = 0; i < 500 && got == -FI_EAGAIN; i++) {
		usleep(10000);
		got = fi_cq_readerr(pair.server_cq, &err, 0);
	}
	ASSERT_EQ(1, got);
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(in, err.op_context);
	EXPECT_EQ(0, memcmp(in, "auto", 4));
	EXPECT_EQ(0, in[4]);  // nothing past the posted length
}

TEST(TcpRobustness, PortRangeParameterBoundsEphemeralBinds)
{
	// Ports of this provider's test range (20000-20999).
	setenv("FI_TCP_PORT_LOW_RANGE", "20900", 1);
	setenv("FI_TCP_PORT_HIGH_RANGE", "20949", 1);
	tcp::load_settings();
	{
		TcpPair pair;
		ASSERT_TRUE(pair.open());
		auto *listen = reinterpret_cast<const sockaddr_in *>(pair.listen_addr.data());
		int port = ntohs(listen->sin_port);
		EXPECT_GE(port, 20900);
		EXPECT_LE(port, 20949);
		ASSERT_TRUE(pair.connect());
		sockaddr_in name{};
		size_t len = sizeof(name);
		ASSERT_EQ(0, fi_getname(&pair.client->fid, &name, &len));
		EXPECT_GE(ntohs(name.sin_port), 20900);
		EXPECT_LE(ntohs(name.sin_port), 20949);
	}
	unsetenv("FI_TCP_PORT_LOW_RANGE");
	unsetenv("FI_TCP_PORT_HIGH_RANGE");
	tcp::load_settings();
}

TEST(TcpRobustness, ConcurrentSendersOnOneEndpoint)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	constexpr int kPerThread = 500;
	constexpr int kThreads = 2;
	std::atomic<int> sent{0};
	auto sender = [&](uint8_t tag) {
		uint8_t msg[8];
		memset(msg, tag, sizeof(msg));
		for (int i = 0; i < kPerThread;) {
			ssize_t ret = fi_inject(pair.client, msg, sizeof(msg), 0);
			if (ret == 0) {
				i++;
				sent++;
			} else if (ret == -FI_EAGAIN) {
				fi_cq_data_entry entry;
				fi_cq_read(pair.client_cq, &entry, 1);   // make room
			} else {
				ADD_FAILURE() << "fi_inject: " << ret;
				return;
			}
		}
	};
	// The receiver keeps a window of receives posted and counts what arrives.
	std::vector<std::array<uint8_t, 8>> slots(64);
	for (auto &slot : slots)
		ASSERT_EQ(0, fi_recv(pair.server, slot.data(), 8, nullptr, 0, slot.data()));
	// Joined on every path, also when an expectation below fails.
	std::vector<std::thread> threads;
	for (int t = 0; t < kThreads; t++)
		threads.emplace_back(sender, static_cast<uint8_t>(0x10 + t));
	int counts[kThreads] = {};
	int received = 0;
	auto start = std::chrono::steady_clock::now();
	while (received < kThreads * kPerThread &&
	       std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
		fi_cq_data_entry entry;
		if (fi_cq_read(pair.server_cq, &entry, 1) != 1)
			continue;
		auto *buf = static_cast<uint8_t *>(entry.op_context);
		int who = buf[0] - 0x10;
		bool intact = entry.len == 8 && who >= 0 && who < kThreads;
		for (int i = 1; i < 8; i++)
			intact = intact && buf[0] == buf[i];   // never interleaved within a message
		EXPECT_TRUE(intact);
		if (!intact)
			break;
		counts[who]++;
		received++;
		if (fi_recv(pair.server, buf, 8, nullptr, 0, buf) != 0) {
			ADD_FAILURE() << "fi_recv";
			break;
		}
	}
	for (auto &t : threads)
		t.join();
	EXPECT_EQ(kThreads * kPerThread, received);
	for (int c : counts)
		EXPECT_EQ(kPerThread, c);
}

namespace {

// A raw socket peer accepted by the pair's listener as `*ep`, with `posted` receives of
// `len` bytes posted before the accept (contexts: the buffers). Returns the raw fd.
int accept_raw_peer(TcpPair &pair, fid_ep **ep, std::vector<std::vector<char>> &posted)
{
	int fd = raw_connect(pair);
	EXPECT_GE(fd, 0);
	if (fd < 0)
		return -1;
	uint8_t request[tcp::kCmHeaderSize];
	tcp::encode_cm_header(tcp::CmType::request, 0, request);
	EXPECT_EQ(static_cast<ssize_t>(sizeof(request)), write(fd, request, sizeof(request)));
	EqEvent req = pair.wait_eq(pair.server_eq);
	EXPECT_EQ(FI_CONNREQ, req.event);
	EXPECT_EQ(0, fi_endpoint(pair.domain, req.info, ep, nullptr));
	fi_freeinfo(req.info);
	EXPECT_EQ(0, fi_ep_bind(*ep, &pair.server_eq->fid, 0));
	EXPECT_EQ(0, fi_ep_bind(*ep, &pair.server_cq->fid, FI_TRANSMIT | FI_RECV));
	EXPECT_EQ(0, fi_enable(*ep));
	for (auto &buf : posted)
		EXPECT_EQ(0, fi_recv(*ep, buf.data(), buf.size(), nullptr, 0, buf.data()));
	EXPECT_EQ(0, fi_accept(*ep, nullptr, 0));
	EXPECT_EQ(FI_CONNECTED, pair.wait_eq(pair.server_eq).event);
	uint8_t reply[tcp::kCmHeaderSize];
	EXPECT_EQ(static_cast<ssize_t>(sizeof(reply)), read(fd, reply, sizeof(reply)));
	return fd;
}

// The header of a `size`-byte message and its first `part` bytes (pattern i & 0xff).
std::vector<uint8_t> message_start(uint64_t size, size_t part)
{
	tcp::WireHeader h;
	h.op = tcp::WireOp::msg;
	h.size = size;
	std::vector<uint8_t> out(tcp::kWireHeaderSize + part);
	tcp::encode_header(h, out.data());
	for (size_t i = 0; i < part; i++)
		out[tcp::kWireHeaderSize + i] = static_cast<uint8_t>(i);
	return out;
}

// FI_TCP_RX_STALL_TIMEOUT for the domains opened while it lives.
struct StallTimeout {
	explicit StallTimeout(const char *ms) { setenv("FI_TCP_RX_STALL_TIMEOUT", ms, 1); }
	~StallTimeout() { unsetenv("FI_TCP_RX_STALL_TIMEOUT"); }
};

} // namespace

// A peer that sends a message's header and part of its payload and then goes silent holds
// the receive being filled: after FI_TCP_RX_STALL_TIMEOUT with no byte the connection is
// failed, that receive completes with FI_ETIMEDOUT (the others posted with FI_ECANCELED) and
// FI_SHUTDOWN follows, so an application waiting on that receive goes on.
TEST(TcpRobustness, PeerSilentMidMessageFailsAfterTheStallTimeout)
{
	TcpPair pair;
	{
		StallTimeout timeout("200");
		ASSERT_TRUE(pair.open());
	}
	fid_ep *ep = nullptr;
	std::vector<std::vector<char>> posted(2, std::vector<char>(1000));
	int fd = accept_raw_peer(pair, &ep, posted);
	ASSERT_GE(fd, 0);
	std::vector<uint8_t> part = message_start(1000, 100);
	ASSERT_EQ(static_cast<ssize_t>(part.size()), write(fd, part.data(), part.size()));
	fi_cq_data_entry entry;
	fi_cq_err_entry err{};
	ASSERT_EQ(-FI_EAVAIL, pair.wait_cq(pair.server_cq, &entry, &err, 10000));
	EXPECT_EQ(FI_ETIMEDOUT, err.err);
	EXPECT_EQ(posted[0].data(), err.op_context);
	ASSERT_EQ(-FI_EAVAIL, pair.wait_cq(pair.server_cq, &entry, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(posted[1].data(), err.op_context);
	EqEvent ev = pair.wait_eq(pair.server_eq);
	EXPECT_EQ(FI_SHUTDOWN, ev.event);
	EXPECT_EQ(&ep->fid, ev.fid);
	close(fd);
	fi_close(&ep->fid);
}

// Bytes waiting in the socket are never a stall: an application that does not progress for
// longer than the timeout (the peer sent the rest meanwhile) still gets its message whole.
TEST(TcpRobustness, RestWaitingInTheSocketIsNoStall)
{
	TcpPair pair;
	{
		StallTimeout timeout("50");
		ASSERT_TRUE(pair.open());
	}
	fid_ep *ep = nullptr;
	std::vector<std::vector<char>> posted(1, std::vector<char>(1000));
	int fd = accept_raw_peer(pair, &ep, posted);
	ASSERT_GE(fd, 0);
	std::vector<uint8_t> whole = message_start(1000, 1000);
	ASSERT_EQ(148, write(fd, whole.data(), 148));
	// The first part is read (the receive is being filled)...
	EXPECT_TRUE(pair.cq_stays_empty(pair.server_cq, 30));
	// ...then nobody progresses for several timeouts (the stall timer fires meanwhile),
	// and the rest arrives before the next progress call.
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	ASSERT_EQ(static_cast<ssize_t>(whole.size() - 148),
		  write(fd, whole.data() + 148, whole.size() - 148));
	fi_cq_data_entry entry;
	fi_cq_err_entry err{};
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry, &err));
	EXPECT_EQ(posted[0].data(), entry.op_context);
	EXPECT_EQ(1000u, entry.len);
	EXPECT_EQ(0, memcmp(posted[0].data(), whole.data() + tcp::kWireHeaderSize, 1000));
	close(fd);
	fi_close(&ep->fid);
}
