// Same-host rendezvous (rxm_cma.h): the offer's encoding, the wire rules of the cma flag, the
// proof of a peer's pid and the pull, exercised on this process's own memory; and, between two
// endpoints of this process over tcp;ofi_rxm, what a keyless offer whose pull fails does.
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/test/rxm_test_connections.h"
#include "src/registry.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

using namespace rxm;

namespace {

CmaOffer own_offer(const uint8_t (&token)[kCmaTokenSize])
{
	CmaOffer o;
	o.pid = static_cast<uint32_t>(getpid());
	o.token_addr = reinterpret_cast<uintptr_t>(token);
	memcpy(o.token, token, kCmaTokenSize);
	return o;
}

} // namespace

TEST(RxmCma, OfferRoundTripAndRejects)
{
	CmaOffer o;
	o.pid = 1234;
	o.token_addr = 0x7f0011223344ULL;
	for (size_t i = 0; i < kCmaTokenSize; i++)
		o.token[i] = static_cast<uint8_t>(i * 7);
	o.addr[0] = 0x1000;
	o.addr[3] = 0x4000;
	std::vector<uint8_t> b(kCmaOfferSize);
	encode_cma_offer(o, b.data());
	CmaOffer d;
	ASSERT_EQ(decode_cma_offer(b, &d), 0);
	EXPECT_EQ(d.pid, 1234u);
	EXPECT_EQ(d.token_addr, o.token_addr);
	EXPECT_EQ(memcmp(d.token, o.token, kCmaTokenSize), 0);
	EXPECT_EQ(d.addr[0], 0x1000u);
	EXPECT_EQ(d.addr[3], 0x4000u);

	EXPECT_EQ(decode_cma_offer(std::span(b).first(kCmaOfferSize - 1), &d), -FI_EIO);
	auto bad = b;
	bad[4] = 1; // reserved word
	EXPECT_EQ(decode_cma_offer(bad, &d), -FI_EIO);
	CmaOffer zero_pid = o;
	zero_pid.pid = 0;
	encode_cma_offer(zero_pid, bad.data());
	EXPECT_EQ(decode_cma_offer(bad, &d), -FI_EIO);
	CmaOffer huge_pid = o;
	huge_pid.pid = 0x80000000u;
	encode_cma_offer(huge_pid, bad.data());
	EXPECT_EQ(decode_cma_offer(bad, &d), -FI_EIO);
}

TEST(RxmCma, FlagOnlyOnRendezvousRequestAndDone)
{
	auto decode = [](WireHeader h) {
		std::vector<uint8_t> m(kWireHeaderSize + h.payload_len, 0);
		encode_header(h, m.data());
		WireHeader out;
		return decode_message(m, &out);
	};
	WireHeader req;
	req.op = WireOp::rndv_request;
	req.total_len = 100;
	req.payload_len = static_cast<uint32_t>(rndv_payload_size(1));
	EXPECT_EQ(decode(req), 0);
	req.flags = wire_flag::cma; // flagged: the offer must follow the segments
	EXPECT_EQ(decode(req), -FI_EIO);
	req.payload_len += kCmaOfferSize;
	EXPECT_EQ(decode(req), 0);
	req.payload_len = static_cast<uint32_t>(rndv_payload_size(kRndvMaxSegments) +
						kCmaOfferSize + 1);
	EXPECT_EQ(decode(req), -FI_EIO);

	WireHeader done;
	done.op = WireOp::rndv_done;
	done.flags = wire_flag::cma;
	EXPECT_EQ(decode(done), 0);

	WireHeader eager;
	eager.op = WireOp::eager;
	eager.flags = wire_flag::cma;
	eager.payload_len = 4;
	eager.total_len = 4;
	EXPECT_EQ(decode(eager), -FI_EIO);
}

// A keyless offer (wire_flag::cma_only) is a request that carries a same-host offer; nothing
// else may claim to have no keys.
TEST(RxmCma, KeylessOnlyOnAnOfferingRequest)
{
	auto decode = [](WireHeader h) {
		std::vector<uint8_t> m(kWireHeaderSize + h.payload_len, 0);
		encode_header(h, m.data());
		WireHeader out;
		int ret = decode_message(m, &out);
		EXPECT_TRUE(ret || out.flags == h.flags);
		return ret;
	};
	WireHeader req;
	req.op = WireOp::rndv_request;
	req.total_len = 100;
	req.payload_len = static_cast<uint32_t>(rndv_payload_size(1) + kCmaOfferSize);
	req.flags = wire_flag::cma | wire_flag::cma_only;
	EXPECT_EQ(decode(req), 0);
	req.flags = wire_flag::cma_only; // no offer to pull: nothing could read it
	req.payload_len = static_cast<uint32_t>(rndv_payload_size(1));
	EXPECT_EQ(decode(req), -FI_EIO);

	WireHeader done;
	done.op = WireOp::rndv_done;
	done.flags = wire_flag::cma | wire_flag::cma_only;
	EXPECT_EQ(decode(done), -FI_EIO);
}

// The pid an offer names is cached, but never across a fork: a child offering its parent's
// pid would have the parent's memory read in its name.
TEST(RxmCma, SelfPidIsTheChildsAfterFork)
{
	ASSERT_EQ(cma_self_pid(), static_cast<uint32_t>(getpid()));
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		_exit(cma_self_pid() == static_cast<uint32_t>(getpid()) ? 0 : 1);
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(cma_self_pid(), static_cast<uint32_t>(getpid()));
}

TEST(RxmCma, PeerProvedByItsToken)
{
	uint8_t token[kCmaTokenSize];
	ASSERT_TRUE(cma_make_token(token));
	CmaOffer o = own_offer(token);
	EXPECT_EQ(cma_check_peer(o), 0);

	CmaOffer other_bytes = o;
	other_bytes.token[5] ^= 1;
	EXPECT_EQ(cma_check_peer(other_bytes), -FI_EIO);

	CmaOffer unmapped = o;
	unmapped.token_addr = 8; // the first page is never mapped
	EXPECT_EQ(cma_check_peer(unmapped), -EFAULT);

	CmaOffer no_process = o;
	no_process.pid = 0x7ffffff0; // above any pid_max
	EXPECT_EQ(cma_check_peer(no_process), -ESRCH);
}

TEST(RxmCma, PullGathersSegmentsIntoTheLocalIov)
{
	std::vector<uint8_t> src(3000);
	for (size_t i = 0; i < src.size(); i++)
		src[i] = static_cast<uint8_t>(i * 13 + 1);
	// Remote: two segments; local: three pieces cut elsewhere.
	RndvSegment segs[2] = {{0, 1000, 0}, {0, 2000, 0}};
	uint64_t addr[kRndvMaxSegments] = {reinterpret_cast<uintptr_t>(src.data()),
					   reinterpret_cast<uintptr_t>(src.data() + 1000)};
	std::vector<uint8_t> dst(3000, 0);
	iovec local[3] = {{dst.data(), 10}, {dst.data() + 10, 2500}, {dst.data() + 2510, 490}};
	ASSERT_EQ(cma_pull(getpid(), local, 3, segs, addr, 2, 3000), 0);
	EXPECT_EQ(dst, src);

	// to_read bounds what lands: a shorter pull leaves the rest untouched.
	std::vector<uint8_t> part(3000, 0xee);
	iovec whole{part.data(), part.size()};
	ASSERT_EQ(cma_pull(getpid(), &whole, 1, segs, addr, 2, 1500), 0);
	EXPECT_EQ(memcmp(part.data(), src.data(), 1500), 0);
	EXPECT_EQ(part[1500], 0xee);

	// More than the segments describe, or a bad remote address: an error, not a hang.
	EXPECT_EQ(cma_pull(getpid(), &whole, 1, segs, addr, 2, 3001), -FI_EIO);
	uint64_t bad_addr[kRndvMaxSegments] = {8, 16};
	EXPECT_EQ(cma_pull(getpid(), &whole, 1, segs, bad_addr, 2, 3000), -EFAULT);
}

// Keyless same-host rendezvous (rxm_cma.h): once a peer pulled an offer, the sender registers
// nothing for the next ones, so the proved peer's process_vm_readv is the only way to the
// buffers. A pull that then fails (here the sender unmaps its buffer while the message is in
// flight, which an application must not do) fails the message at both ends: the receive and
// the send complete with an error (there is no RMA read to fall back on), and the connection
// keeps working. (A keyed offer fails the same way, later: its fallback RMA read finds the
// pages gone too.)

namespace {

// The registry refers to providers weakly; referencing them links them in from the
// convenience library (shm too: the peer moves to it, as between two processes).
#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;
#ifdef HAVE_SHM
fi_provider *(*volatile link_shm)() = ofi_shm_provider_init;
#endif

using Node = rxm_test::ContextNode;
using rxm_test::poll_until;

constexpr size_t kSize = 64 * 1024; // a rendezvous for a same-host peer (above 32 KiB)

void *map_filled(char fill)
{
	void *p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_NE(MAP_FAILED, p);
	if (p != MAP_FAILED)
		memset(p, fill, kSize);
	return p;
}

class RxmCmaKeyless : public rxm_test::TcpRxmConnections {};

TEST_F(RxmCmaKeyless, FailedPullFailsTheMessageAtBothEnds)
{
	auto sender = std::make_unique<Node>(info);
	auto receiver = std::make_unique<Node>(info);
	fi_addr_t to_receiver = sender->insert(*receiver);
	std::vector<Node *> nodes{sender.get(), receiver.get()};
	std::vector<char> in(kSize);
	int ctx[6];

	// 1. Pulled (keyed: the peer has not pulled before); its done says the peer pulls.
	void *first = map_filled('a');
	ASSERT_EQ(0, fi_recv(receiver->ep, in.data(), kSize, nullptr, FI_ADDR_UNSPEC, &ctx[0]));
	ASSERT_EQ(0, fi_send(sender->ep, first, kSize, nullptr, to_receiver, &ctx[1]));
	ASSERT_TRUE(poll_until(nodes, [&] {
		return sender->done.size() + sender->failed == 1 &&
		       receiver->done.size() + receiver->failed == 1;
	}));
	ASSERT_EQ(0, sender->failed + receiver->failed);
	EXPECT_EQ('a', in[kSize - 1]);
	munmap(first, kSize);

	// 2. Keyless; its pages go away before the receiver pulls.
	void *second = map_filled('b');
	ASSERT_EQ(0, fi_recv(receiver->ep, in.data(), kSize, nullptr, FI_ADDR_UNSPEC, &ctx[2]));
	ASSERT_EQ(0, fi_send(sender->ep, second, kSize, nullptr, to_receiver, &ctx[3]));
	munmap(second, kSize);
	ASSERT_TRUE(poll_until(nodes, [&] {
		return sender->done.size() + sender->failed == 2 &&
		       receiver->done.size() + receiver->failed == 2;
	}));
	EXPECT_EQ(1, sender->failed);
	EXPECT_EQ(1, receiver->failed);
	EXPECT_NE('b', in[kSize - 1]);

	// 3. The connection still carries messages (with keys, or eager, from now on).
	void *third = map_filled('c');
	ASSERT_EQ(0, fi_recv(receiver->ep, in.data(), kSize, nullptr, FI_ADDR_UNSPEC, &ctx[4]));
	ASSERT_EQ(0, fi_send(sender->ep, third, kSize, nullptr, to_receiver, &ctx[5]));
	ASSERT_TRUE(poll_until(nodes, [&] {
		return sender->done.size() + sender->failed == 3 &&
		       receiver->done.size() + receiver->failed == 3;
	}));
	EXPECT_EQ(1, sender->failed);
	EXPECT_EQ(1, receiver->failed);
	EXPECT_EQ(std::vector<char>(kSize, 'c'), in);
	munmap(third, kSize);
}

} // namespace
