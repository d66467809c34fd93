// Untrusted peers: a connector speaking the protocol by hand (internal headers) that forges
// ring entries or indices, a process of another user, and a peer process that exits.
#include "prov/shm/shm_address.h"
#include "prov/shm/shm_cm.h"
#include "prov/shm/shm_membarrier.h"
#include "prov/shm/shm_segment.h"
#include "prov/shm/test/shm_test_pair.h"
#include "prov/util/rx_inplace_ops.h"

#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using shm_test::EqEvent;
using shm_test::ShmPair;

int connect_raw(const std::vector<uint8_t> &listen_addr)
{
	shm::ShmAddress a;
	if (!shm::parse_address(listen_addr.data(), listen_addr.size(), &a))
		return -1;
	sockaddr_un name;
	socklen_t len = shm::socket_name(a, &name);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (connect(s, reinterpret_cast<sockaddr *>(&name), len) != 0) {
		close(s);
		return -1;
	}
	return s;
}

// A peer of our own making: it holds the segment and writes ring 0 as it likes.
struct RawPeer {
	int sock = -1;
	int bell = -1;
	std::unique_ptr<shm::Segment> segment;
	~RawPeer()
	{
		if (sock >= 0)
			close(sock);
		if (bell >= 0)
			close(bell);
	}
	shm::Ring &ring() { return segment->layout().rings[0]; }
	// Writes one slot with the given header fields and publishes `advance` slots.
	void forge(uint32_t flags, uint32_t len, uint64_t total, uint64_t head_advance = 1)
	{
		write(message_header(flags, len, total), nullptr, head_advance);
	}
	// Writes one slot exactly as given (header and payload) and publishes it.
	void put(const shm::SlotHeader &h, const void *payload = nullptr) { write(h, payload, 1); }
	// The same with head moved by `head_advance` (a forged head).
	void write_with_head(const shm::SlotHeader &h, const void *payload, uint64_t head_advance)
	{
		write(h, payload, head_advance);
	}
	static shm::SlotHeader message_header(uint32_t flags, uint32_t len, uint64_t total)
	{
		shm::SlotHeader h{};
		h.op = shm::kOpMsg;
		h.flags = flags;
		h.len = len;
		h.total = total;
		return h;
	}

private:
	// The slot is ready with its seq (head + 1) unless h.seq forges another one.
	void write(const shm::SlotHeader &h, const void *payload, uint64_t head_advance)
	{
		uint64_t head = ring().control.head.load();
		uint8_t *slot = ring().slots[head % shm::kSlots];
		shm::write_slot_fields(slot, h);
		if (payload)
			memcpy(slot + sizeof(h), payload, h.len);
		shm::slot_seq(slot).store(h.seq ? h.seq : head + 1);
		ring().control.head.store(head + head_advance);
	}
};

class ShmForged : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(p.open());
		peer.sock = connect_raw(p.listen_addr);
		ASSERT_GE(peer.sock, 0);
		peer.segment = shm::Segment::create();
		peer.bell = eventfd(0, (blocking_bell ? 0 : EFD_NONBLOCK) | EFD_CLOEXEC);
		int fds[2] = {peer.segment->fd(), peer.bell};
		ASSERT_EQ(0, shm::send_cm(peer.sock, shm::kCmRequest, nullptr, 0, fds, 2));
		peer.segment->close_fd();
		ASSERT_TRUE(p.accept_next());
		shm::CmMessage accept_msg;
		ASSERT_EQ(1, shm::recv_cm(peer.sock, &accept_msg));
		EXPECT_EQ(shm::kCmAccept, accept_msg.type);
		accept_msg.close_fds();
		ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, buf));
	}
	// The forged entry fails the connection: FI_SHUTDOWN, the receive back with an error.
	void expect_failed()
	{
		EqEvent s = p.wait_eq(p.server_eq);
		EXPECT_EQ(FI_SHUTDOWN, s.event);
		fi_cq_data_entry e;
		fi_cq_err_entry err{};
		EXPECT_EQ(-FI_EAVAIL, p.wait_cq(p.server_cq, &e, &err));
		EXPECT_NE(0, err.err);
		EXPECT_EQ(-FI_ENOTCONN, fi_send(p.server, "x", 1, nullptr, 0, nullptr));
		// The peer learns it too: its socket is closed.
		char byte;
		EXPECT_LE(recv(peer.sock, &byte, 1, 0), 0);
	}
	ShmPair p;
	RawPeer peer;
	char buf[64] = {};
	bool blocking_bell = false;
};

// A peer hands over a blocking doorbell and fills its counter: ringing it must not block us.
class ShmBlockingBell : public ShmForged {
public:
	ShmBlockingBell() { blocking_bell = true; }
};

TEST_F(ShmBlockingBell, AFullPeerDoorbellDoesNotHoldUs)
{
	uint64_t almost_full = 0xfffffffffffffffeull;
	ASSERT_EQ(8, write(peer.bell, &almost_full, sizeof(almost_full)));
	peer.segment->layout().rings[1].control.consumer_sleeping.store(1);
	ASSERT_EQ(0, fi_send(p.server, "x", 1, nullptr, 0, nullptr));
	fi_cq_data_entry e;
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_EQ(1u, peer.segment->layout().rings[1].control.head.load());
}

// The acceptor says in its word of the segment, before its accept message, whether its
// sleeps call membarrier (a connector that says so too may then publish without a fence);
// with membarrier unavailable it says no, and the pair fences.
TEST_F(ShmForged, AcceptorDeclaresItsSleepBarrier)
{
	EXPECT_EQ(shm::membarrier_ready() ? 1u : 0u,
		  peer.segment->layout().sleeps_with_membarrier[1].load());
}

class ShmForgedFenced : public ShmForged {
public:
	ShmForgedFenced() { shm::membarrier_force_fallback(true); }
	~ShmForgedFenced() override { shm::membarrier_force_fallback(false); }
};

TEST_F(ShmForgedFenced, AcceptorWithoutMembarrierDeclaresNothing)
{
	EXPECT_FALSE(shm::membarrier_ready());
	EXPECT_EQ(0u, peer.segment->layout().sleeps_with_membarrier[1].load());
	// Messages still flow.
	peer.put(RawPeer::message_header(shm::kSlotFirst, 3, 3), "ok");
	fi_cq_data_entry e;
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_STREQ("ok", buf);
}

TEST_F(ShmForged, LengthBeyondTheSlot)
{
	peer.forge(shm::kSlotFirst, shm::kSlotPayload + 1, shm::kSlotPayload + 1);
	expect_failed();
}

TEST_F(ShmForged, LengthDisagreesWithTotal)
{
	peer.forge(shm::kSlotFirst, 10, 5);
	expect_failed();
}

TEST_F(ShmForged, ContinuationWithoutAFirstSlot)
{
	peer.forge(0, 10, 10);
	expect_failed();
}

TEST_F(ShmForged, UnknownFlagsOrOp)
{
	peer.forge(shm::kSlotFirst | 0x80, 1, 1);
	expect_failed();
}

// Readiness is the slot's seq, never the peer's head: an impossible head claims nothing.
TEST_F(ShmForged, HeadBeyondTheRingClaimsNothing)
{
	peer.write_with_head(RawPeer::message_header(shm::kSlotFirst, 3, 3), "ok",
			     shm::kSlots + 5);
	fi_cq_data_entry e;
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_STREQ("ok", buf);
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 20)); // nothing read past the one slot
	EXPECT_EQ(1u, peer.ring().control.tail.load());
}

// A slot whose seq is not the next one (another lap's, a later one's) is not ready: nothing
// is read from it until the peer writes the right seq.
TEST_F(ShmForged, SlotWithAnotherSeqIsNotRead)
{
	for (uint64_t forged : {uint64_t(shm::kSlots) + 1, uint64_t(2), ~uint64_t(0)}) {
		shm::SlotHeader h = RawPeer::message_header(shm::kSlotFirst, shm::kSlotPayload + 1,
							    shm::kSlotPayload + 1); // invalid too
		h.seq = forged;
		peer.put(h);
		EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 20)) << forged;
		EXPECT_EQ(0u, peer.ring().control.tail.load()) << forged;
		peer.ring().control.head.store(0); // the same slot again
	}
	// Now valid, with the right seq: delivered.
	peer.put(RawPeer::message_header(shm::kSlotFirst, 3, 3), "ok");
	fi_cq_data_entry e;
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_STREQ("ok", buf);
}

TEST_F(ShmForged, HugeTotal)
{
	peer.forge(shm::kSlotFirst, shm::kSlotPayload, uint64_t(1) << 62);
	expect_failed();
}

TEST_F(ShmForged, AValidEntryIsDelivered)
{
	// The same hand-made peer, well behaved: its message arrives (the test peer is right).
	peer.put(RawPeer::message_header(shm::kSlotFirst, 3, 3), "ok");
	fi_cq_data_entry e;
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_EQ(3u, e.len);
	EXPECT_STREQ("ok", buf);
}

// With a consumer taking messages in the ring (rx_inplace_ops.h), a forged slot is checked
// before it is offered: never shown to the consumer, the connection fails as without one.
class ShmForgedInPlace : public ShmForged {
protected:
	void SetUp() override
	{
		ShmForged::SetUp();
		ofi_rx_inplace_ops *ops = nullptr;
		ASSERT_EQ(0, fi_open_ops(&p.domain->fid, OFI_RX_INPLACE_OPS_NAME, 0,
					 reinterpret_cast<void **>(&ops), nullptr));
		ASSERT_EQ(0, ops->set_consumer(p.server, consume, this));
	}
	static int consume(void *arg, const ofi_rx_inplace_request *req)
	{
		auto *self = static_cast<ShmForgedInPlace *>(arg);
		self->offers++;
		if (req->msg) {
			self->offered.assign(static_cast<const char *>(req->msg), req->len);
			return 1;
		}
		if (!req->piece_count)
			return 0; // shown only
		self->piece_offers++;
		self->offered.clear();
		for (size_t i = 0; i < req->piece_count; i++)
			self->offered.append(static_cast<const char *>(req->pieces[i].iov_base),
					     req->pieces[i].iov_len);
		return 1;
	}
	// A message over two slots: a full first slot and `second` as its continuation.
	void put_two_slots(const shm::SlotHeader &second)
	{
		std::string first(shm::kSlotPayload, 'f');
		peer.put(RawPeer::message_header(shm::kSlotFirst, shm::kSlotPayload,
						 shm::kSlotPayload + 5),
			 first.data());
		peer.put(second, "tail");
	}
	int offers = 0;
	int piece_offers = 0;
	std::string offered;
};

TEST_F(ShmForgedInPlace, LengthBeyondTheSlotIsNotOffered)
{
	peer.forge(shm::kSlotFirst, shm::kSlotPayload + 1, shm::kSlotPayload + 1);
	expect_failed();
	EXPECT_EQ(0, offers);
}

TEST_F(ShmForgedInPlace, LengthDisagreeingWithTotalIsNotOffered)
{
	peer.forge(shm::kSlotFirst, 5, 4);
	expect_failed();
	EXPECT_EQ(0, offers);
}

TEST_F(ShmForgedInPlace, UnknownFlagsAreNotOffered)
{
	peer.forge(shm::kSlotFirst | 0x80, 1, 1);
	expect_failed();
	EXPECT_EQ(0, offers);
}

TEST_F(ShmForgedInPlace, AValidEntryIsOfferedWhereItLies)
{
	peer.put(RawPeer::message_header(shm::kSlotFirst, 3, 3), "ok");
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 50));
	EXPECT_EQ(1, offers);
	EXPECT_EQ(std::string("ok", 3), offered);
	EXPECT_EQ(1u, peer.ring().control.tail.load()); // the slot is free again
}

// A whole one-slot message passes a test of its own (consumed_in_place) before valid_slot's
// general walk: each field that walk requires to be 0 for it still keeps it from the consumer.
class ShmForgedWholeSlot : public ShmForgedInPlace {
protected:
	void expect_refused(const shm::SlotHeader &h)
	{
		peer.put(h, "ok");
		// Not expect_failed(): its read of the peer's socket would block if an offered
		// forgery left the connection up.
		EXPECT_EQ(FI_SHUTDOWN, p.wait_eq(p.server_eq).event);
		EXPECT_EQ(0, offers);
	}
	shm::SlotHeader h = RawPeer::message_header(shm::kSlotFirst, 3, 3);
};

TEST_F(ShmForgedWholeSlot, Status)
{
	h.status = FI_EIO;
	expect_refused(h);
}

TEST_F(ShmForgedWholeSlot, Id)
{
	h.id = 1;
	expect_refused(h);
}

TEST_F(ShmForgedWholeSlot, RmaKey)
{
	h.rma_key = 1;
	expect_refused(h);
}

TEST_F(ShmForgedWholeSlot, RmaAddr)
{
	h.rma_addr = 1ULL << 40;
	expect_refused(h);
}


TEST_F(ShmForgedInPlace, AValidMultiSlotMessageIsOfferedInPieces)
{
	put_two_slots(RawPeer::message_header(0, 5, 5));
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 50));
	EXPECT_EQ(1, piece_offers);
	EXPECT_EQ(std::string(shm::kSlotPayload, 'f') + std::string("tail", 5), offered);
	EXPECT_EQ(2u, peer.ring().control.tail.load()); // both slots free again
}

// A forged continuation is never offered in pieces (the consumer here would take it): the
// message goes slot by slot, where take_slot finds the forgery and fails the connection.
class ShmForgedContinuation : public ShmForgedInPlace {
protected:
	void expect_refused(const shm::SlotHeader &second)
	{
		put_two_slots(second);
		expect_failed();
		EXPECT_EQ(0, piece_offers);
	}
	shm::SlotHeader h = RawPeer::message_header(0, 5, 5);
};

TEST_F(ShmForgedContinuation, TotalBeyondWhatIsLeft)
{
	h.total = 6;
	expect_refused(h);
}

TEST_F(ShmForgedContinuation, LengthShortOfWhatIsLeft)
{
	h.len = 4;
	expect_refused(h);
}

TEST_F(ShmForgedContinuation, FirstSlotFlagsOrData)
{
	h.flags = shm::kSlotCqData;
	h.cq_data = 1;
	expect_refused(h);
}

TEST_F(ShmForgedContinuation, AnotherOperation)
{
	h.op = shm::kOpWrite;
	expect_refused(h);
}

TEST_F(ShmForgedContinuation, RmaFields)
{
	h.rma_key = 1;
	expect_refused(h);
}

TEST_F(ShmForged, AnAckForNoOperation)
{
	shm::SlotHeader h{};
	h.op = shm::kOpAck;
	h.flags = shm::kSlotFirst;
	h.id = 0; // the first pending entry's id, but nothing was ever sent
	peer.put(h);
	expect_failed();
}

TEST_F(ShmForged, AReadResponseForNoOperation)
{
	shm::SlotHeader h{};
	h.op = shm::kOpReadResp;
	h.flags = shm::kSlotFirst;
	h.len = 3;
	h.total = 3;
	h.id = 7;
	peer.put(h, "abc");
	expect_failed();
}

TEST_F(ShmForged, AReadRequestWithPayload)
{
	shm::SlotHeader h{};
	h.op = shm::kOpReadReq;
	h.flags = shm::kSlotFirst;
	h.len = 3; // a request carries none
	h.total = 3;
	peer.put(h, "abc");
	expect_failed();
}

TEST_F(ShmForged, AStatusOnARequest)
{
	shm::SlotHeader h{};
	h.op = shm::kOpWrite;
	h.flags = shm::kSlotFirst;
	h.len = 1;
	h.total = 1;
	h.status = FI_EINVAL; // only answers carry one
	peer.put(h, "x");
	expect_failed();
}

// A forged peer's RMA into memory it was not given is answered with a refusal: nothing is
// written, nothing is read, the connection stays (a refused request is not a protocol error).
TEST_F(ShmForged, RmaOutsideRegisteredMemoryIsRefused)
{
	std::vector<uint8_t> region(4096, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(0, fi_mr_reg(p.domain, region.data(), region.size(), FI_REMOTE_READ, 0, 5, 0,
			       &mr, nullptr));
	uint64_t key = fi_mr_key(mr);
	shm::SlotHeader h{};
	h.op = shm::kOpWrite; // a region without FI_REMOTE_WRITE
	h.flags = shm::kSlotFirst;
	h.len = 4;
	h.total = 4;
	h.id = 41;
	h.rma_key = key;
	peer.put(h, "evil");
	h = shm::SlotHeader{};
	h.op = shm::kOpReadReq; // beyond the region
	h.flags = shm::kSlotFirst;
	h.total = 64;
	h.id = 42;
	h.rma_key = key;
	h.rma_addr = 4096 - 32;
	peer.put(h);
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 50)); // progresses the server meanwhile
	shm::Ring &back = peer.segment->layout().rings[1];
	ASSERT_EQ(2u, back.control.head.load());
	shm::SlotHeader a, r;
	memcpy(&a, back.slots[0], sizeof(a));
	memcpy(&r, back.slots[1], sizeof(r));
	EXPECT_EQ(shm::kOpAck, a.op);
	EXPECT_EQ(41u, a.id);
	EXPECT_EQ(uint32_t(FI_EACCES), a.status);
	EXPECT_EQ(shm::kOpReadResp, r.op);
	EXPECT_EQ(42u, r.id);
	EXPECT_EQ(uint32_t(FI_EINVAL), r.status);
	EXPECT_EQ(0u, r.total);
	EXPECT_EQ(std::vector<uint8_t>(4096, 0), region);
	// Still connected: a message from the peer is delivered.
	h = shm::SlotHeader{};
	h.op = shm::kOpMsg;
	h.flags = shm::kSlotFirst;
	h.len = 3;
	h.total = 3;
	peer.put(h, "ok");
	fi_cq_data_entry e;
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_STREQ("ok", buf);
	fi_close(&mr->fid);
}

// A process of another user reaches the listener's socket but is dropped before any
// request is read: no FI_CONNREQ, and no memory is shared with it.
TEST(ShmPeers, AnotherUserIsRefused)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root to run a process as another user";
	ShmPair p;
	ASSERT_TRUE(p.open());
	pid_t child = fork();
	if (child == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		shm::ShmAddress a;
		shm::parse_address(p.listen_addr.data(), p.listen_addr.size(), &a);
		sockaddr_un name;
		shm::socket_name(a, &name); // our uid in the name: rebuild it with the listener's
		char path[108];
		snprintf(path, sizeof(path), "fi_shm.0.%s", a.text + 9);
		memset(name.sun_path, 0, sizeof(name.sun_path));
		memcpy(name.sun_path + 1, path, strlen(path));
		socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + strlen(path);
		int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (connect(s, reinterpret_cast<sockaddr *>(&name), len) != 0)
			_exit(3);
		auto seg = shm::Segment::create();
		int bell = eventfd(0, 0);
		int fds[2] = {seg->fd(), bell};
		shm::send_cm(s, shm::kCmRequest, nullptr, 0, fds, 2);
		char byte;
		// The listener closes the socket: recv ends with 0 or an error.
		_exit(recv(s, &byte, 1, 0) <= 0 ? 0 : 4);
	}
	ASSERT_GT(child, 0);
	EqEvent e = p.wait_eq(p.server_eq, 500);
	int status = 0;
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	// Root of a user namespace (unshare -r) cannot become a user the namespace does not map.
	if (WEXITSTATUS(status) == 2)
		GTEST_SKIP() << "cannot switch to uid 65534 here (a user namespace?)";
	EXPECT_NE(FI_CONNREQ, e.event);
	EXPECT_EQ(0, WEXITSTATUS(status));
}

// A peer process that sends and then dies: its message arrives, then FI_SHUTDOWN.
TEST(ShmPeers, PeerProcessExitIsAShutdown)
{
	ShmPair p;
	ASSERT_TRUE(p.open());
	pid_t child = fork();
	if (child == 0) {
		// Fresh objects of our own in the child, aimed at the parent's listener.
		ShmPair c;
		c.listen_addr = p.listen_addr;
		if (!c.open())
			_exit(2);
		c.listen_addr = p.listen_addr;
		if (!c.open_client())
			_exit(3);
		if (fi_connect(c.client, p.listen_addr.data(), nullptr, 0) != 0)
			_exit(4);
		if (c.wait_eq(c.client_eq).event != FI_CONNECTED)
			_exit(5);
		if (fi_send(c.client, "bye", 4, nullptr, 0, nullptr) != 0)
			_exit(6);
		fi_cq_data_entry e;
		if (c.wait_cq(c.client_cq, &e) != 1)
			_exit(7);
		_exit(0); // no close, like a crash
	}
	ASSERT_GT(child, 0);
	char buf[8] = {};
	ASSERT_TRUE(p.accept_next("", [&](fid_ep *ep) {
		ASSERT_EQ(0, fi_recv(ep, buf, sizeof(buf), nullptr, 0, nullptr));
	}));
	int status = 0;
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	fi_cq_data_entry e;
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_STREQ("bye", buf);
	EXPECT_EQ(FI_SHUTDOWN, p.wait_eq(p.server_eq).event);
}

} // namespace
