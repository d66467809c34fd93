// RMA through the rings: fi_write*/fi_read* land in (or come from) the target's registered
// region only after the target checked key, range and access; bad requests complete with an
// error at the initiator and leave the connection up; remote CQ data and remote counters.
#include "prov/shm/test/shm_test_pair.h"

#include <rdma/fi_rma.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using shm_test::ShmPair;

std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
	std::vector<uint8_t> v(len);
	for (size_t i = 0; i < len; i++)
		v[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 12));
	return v;
}

class ShmRma : public ::testing::Test {
protected:
	void SetUp() override
	{
		p.caps = FI_MSG | FI_RMA;
		p.before_server_enable = [this](fid_ep *ep) {
			fi_cntr_attr attr{};
			attr.events = FI_CNTR_EVENTS_COMP;
			ASSERT_EQ(0, fi_cntr_open(p.domain, &attr, &remote_writes, nullptr));
			ASSERT_EQ(0, fi_cntr_open(p.domain, &attr, &remote_reads, nullptr));
			ASSERT_EQ(0, fi_ep_bind(ep, &remote_writes->fid, FI_REMOTE_WRITE));
			ASSERT_EQ(0, fi_ep_bind(ep, &remote_reads->fid, FI_REMOTE_READ));
		};
		ASSERT_TRUE(p.open());
		ASSERT_TRUE(p.connect());
	}
	void TearDown() override
	{
		for (fid_mr *mr : regions)
			fi_close(&mr->fid);
		regions.clear();
		// The endpoints hold the counters: close them first.
		if (p.server)
			fi_close(&p.server->fid);
		p.server = nullptr;
		if (remote_writes)
			fi_close(&remote_writes->fid);
		if (remote_reads)
			fi_close(&remote_reads->fid);
	}
	// Registers `buf` on the (shared) domain with `access`; returns its key.
	uint64_t reg(std::vector<uint8_t> &buf, uint64_t access, uint64_t key)
	{
		fid_mr *mr = nullptr;
		EXPECT_EQ(0, fi_mr_reg(p.domain, buf.data(), buf.size(), access, 0, key, 0, &mr,
				       nullptr));
		if (!mr)
			return 0;
		regions.push_back(mr);
		return fi_mr_key(mr);
	}
	fi_cq_data_entry completion(fid_cq *cq)
	{
		fi_cq_data_entry e{};
		fi_cq_err_entry err{};
		ssize_t ret = p.wait_cq(cq, &e, &err);
		EXPECT_EQ(1, ret) << fi_strerror(static_cast<int>(-ret)) << " err " << err.err;
		return e;
	}
	// The initiator's error completion (its err value), or 0 if none came.
	int error_completion(void *context)
	{
		fi_cq_data_entry e{};
		fi_cq_err_entry err{};
		ssize_t ret = p.wait_cq(p.client_cq, &e, &err);
		EXPECT_EQ(-FI_EAVAIL, ret);
		EXPECT_EQ(context, err.op_context);
		return ret == -FI_EAVAIL ? err.err : 0;
	}
	// The connection still carries a message both ways after a refused request.
	void still_connected()
	{
		char in[8] = {}, out[8] = "alive";
		ASSERT_EQ(0, fi_recv(p.server, in, sizeof(in), nullptr, 0, nullptr));
		ASSERT_EQ(0, fi_send(p.client, out, sizeof(out), nullptr, 0, nullptr));
		completion(p.server_cq);
		completion(p.client_cq);
		EXPECT_STREQ("alive", in);
	}
	ShmPair p;
	std::vector<fid_mr *> regions;
	fid_cntr *remote_writes = nullptr, *remote_reads = nullptr;
};

TEST_F(ShmRma, InfoOffersRma)
{
	EXPECT_EQ(uint64_t(FI_RMA), p.info->caps & FI_RMA);
	EXPECT_TRUE(p.info->caps & FI_REMOTE_WRITE);
	EXPECT_TRUE(p.info->caps & FI_REMOTE_READ);
}

TEST_F(ShmRma, WriteLandsInRegion)
{
	std::vector<uint8_t> target(8192, 0), src = pattern(3000, 1);
	uint64_t key = reg(target, FI_REMOTE_WRITE, 7);
	int ctx = 0;
	ASSERT_EQ(0, fi_write(p.client, src.data(), src.size(), nullptr, 0, 100, key, &ctx));
	fi_cq_data_entry e = completion(p.client_cq);
	EXPECT_EQ(&ctx, e.op_context);
	EXPECT_EQ(uint64_t(FI_RMA | FI_WRITE), e.flags);
	EXPECT_EQ(0, memcmp(target.data() + 100, src.data(), src.size()));
	EXPECT_EQ(0, target[99]);
	EXPECT_EQ(0, target[3100]);
	EXPECT_EQ(1u, fi_cntr_read(remote_writes));
	// A write without remote CQ data leaves no entry at the target.
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 20));
}

TEST_F(ShmRma, ReadComesFromRegion)
{
	std::vector<uint8_t> target = pattern(8192, 2), dst(5000, 0);
	uint64_t key = reg(target, FI_REMOTE_READ, 8);
	int ctx = 0;
	ASSERT_EQ(0, fi_read(p.client, dst.data(), dst.size(), nullptr, 0, 50, key, &ctx));
	fi_cq_data_entry e = completion(p.client_cq);
	EXPECT_EQ(&ctx, e.op_context);
	EXPECT_EQ(uint64_t(FI_RMA | FI_READ), e.flags);
	EXPECT_EQ(0, memcmp(dst.data(), target.data() + 50, dst.size()));
	EXPECT_EQ(1u, fi_cntr_read(remote_reads));
}

TEST_F(ShmRma, VectorsBothWays)
{
	std::vector<uint8_t> target(20000, 0), a = pattern(5000, 3), b = pattern(7000, 4);
	uint64_t key = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 9);
	iovec out[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
	ASSERT_EQ(0, fi_writev(p.client, out, nullptr, 2, 0, 1000, key, nullptr));
	completion(p.client_cq);
	std::vector<uint8_t> x(9000, 0), y(3000, 0);
	iovec in[2] = {{x.data(), x.size()}, {y.data(), y.size()}};
	fi_rma_iov rma{1000, 12000, key};
	fi_msg_rma msg{};
	msg.msg_iov = in;
	msg.iov_count = 2;
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	ASSERT_EQ(0, fi_readmsg(p.client, &msg, FI_COMPLETION));
	completion(p.client_cq);
	std::vector<uint8_t> sent(a), got(x);
	sent.insert(sent.end(), b.begin(), b.end());
	got.insert(got.end(), y.begin(), y.end());
	EXPECT_EQ(sent, got);
}

TEST_F(ShmRma, WriteDataPostsRemoteCqData)
{
	std::vector<uint8_t> target(4096, 0), src = pattern(64, 5);
	uint64_t key = reg(target, FI_REMOTE_WRITE, 10);
	ASSERT_EQ(0, fi_writedata(p.client, src.data(), src.size(), nullptr, 0xabcdef, 0, 0,
				  key, nullptr));
	fi_cq_data_entry tx = completion(p.client_cq);
	EXPECT_EQ(uint64_t(FI_RMA | FI_WRITE), tx.flags);
	fi_cq_data_entry rx = completion(p.server_cq);
	EXPECT_EQ(uint64_t(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA), rx.flags);
	EXPECT_EQ(0xabcdefu, rx.data);
	EXPECT_EQ(64u, rx.len);
	EXPECT_EQ(0, memcmp(target.data(), src.data(), src.size()));

	// fi_writemsg with FI_REMOTE_CQ_DATA, and the inject form.
	iovec iov{src.data(), 32};
	fi_rma_iov rma{100, 32, key};
	fi_msg_rma msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	msg.data = 77;
	ASSERT_EQ(0, fi_writemsg(p.client, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION));
	completion(p.client_cq);
	rx = completion(p.server_cq);
	EXPECT_EQ(77u, rx.data);
	ASSERT_EQ(0, fi_inject_writedata(p.client, src.data(), 16, 78, 0, 200, key));
	rx = completion(p.server_cq);
	EXPECT_EQ(78u, rx.data);
	EXPECT_EQ(0, memcmp(target.data() + 200, src.data(), 16));
	EXPECT_EQ(3u, fi_cntr_read(remote_writes));
}

TEST_F(ShmRma, InjectWriteIsInTheRingAtReturn)
{
	std::vector<uint8_t> target(4096, 0), check(100, 0);
	std::vector<uint8_t> src = pattern(100, 6);
	uint64_t key = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 11);
	ASSERT_EQ(0, fi_inject_write(p.client, src.data(), src.size(), 0, 10, key));
	src.assign(src.size(), 0xff); // the buffer is ours again at once
	// Requests are served in order: the read sees the write.
	ASSERT_EQ(0, fi_read(p.client, check.data(), check.size(), nullptr, 0, 10, key, nullptr));
	fi_cq_data_entry e = completion(p.client_cq);
	EXPECT_EQ(uint64_t(FI_RMA | FI_READ), e.flags); // the inject made no entry
	EXPECT_EQ(pattern(100, 6), check);
	// An inject larger than inject_size is refused.
	std::vector<uint8_t> big(p.info->tx_attr->inject_size + 1);
	EXPECT_EQ(-FI_EINVAL, fi_inject_write(p.client, big.data(), big.size(), 0, 0, key));
}

TEST_F(ShmRma, UnknownKeyIsRefused)
{
	std::vector<uint8_t> target(4096, 0), buf = pattern(64, 7);
	uint64_t key = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 12);
	int ctx = 0;
	ASSERT_EQ(0, fi_write(p.client, buf.data(), buf.size(), nullptr, 0, 0, key + 1, &ctx));
	EXPECT_EQ(FI_EINVAL, error_completion(&ctx));
	ASSERT_EQ(0, fi_read(p.client, buf.data(), buf.size(), nullptr, 0, 0, key + 1, &ctx));
	EXPECT_EQ(FI_EINVAL, error_completion(&ctx));
	EXPECT_EQ(std::vector<uint8_t>(4096, 0), target);
	EXPECT_EQ(0u, fi_cntr_read(remote_writes));
	still_connected();
}

TEST_F(ShmRma, OutOfBoundsIsRefused)
{
	std::vector<uint8_t> target(4096, 0), buf = pattern(64, 8);
	uint64_t key = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 13);
	int ctx = 0;
	ASSERT_EQ(0, fi_write(p.client, buf.data(), buf.size(), nullptr, 0, 4096 - 63, key,
			      &ctx));
	EXPECT_EQ(FI_EINVAL, error_completion(&ctx));
	ASSERT_EQ(0, fi_read(p.client, buf.data(), buf.size(), nullptr, 0, 4096 - 63, key,
			     &ctx));
	EXPECT_EQ(FI_EINVAL, error_completion(&ctx));
	// An address that wraps around: still outside.
	ASSERT_EQ(0, fi_write(p.client, buf.data(), buf.size(), nullptr, 0, ~uint64_t(0) - 10,
			      key, &ctx));
	EXPECT_EQ(FI_EINVAL, error_completion(&ctx));
	EXPECT_EQ(std::vector<uint8_t>(4096, 0), target);
	still_connected();
}

TEST_F(ShmRma, AccessRightIsChecked)
{
	std::vector<uint8_t> readonly = pattern(4096, 9), writeonly(4096, 0), buf(64, 0x5a);
	uint64_t rkey = reg(readonly, FI_REMOTE_READ, 14);
	uint64_t wkey = reg(writeonly, FI_REMOTE_WRITE, 15);
	int ctx = 0;
	ASSERT_EQ(0, fi_write(p.client, buf.data(), buf.size(), nullptr, 0, 0, rkey, &ctx));
	EXPECT_EQ(FI_EACCES, error_completion(&ctx));
	EXPECT_EQ(pattern(4096, 9), readonly);
	ASSERT_EQ(0, fi_read(p.client, buf.data(), buf.size(), nullptr, 0, 0, wkey, &ctx));
	EXPECT_EQ(FI_EACCES, error_completion(&ctx));
	EXPECT_EQ(std::vector<uint8_t>(64, 0x5a), buf);
	still_connected();
}

TEST_F(ShmRma, OneMebibyteBothWays)
{
	const size_t len = size_t(1) << 20;
	std::vector<uint8_t> target(len, 0), src = pattern(len, 10), back(len, 0);
	uint64_t key = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 16);
	ASSERT_EQ(0, fi_write(p.client, src.data(), len, nullptr, 0, 0, key, nullptr));
	completion(p.client_cq);
	EXPECT_EQ(src, target);
	ASSERT_EQ(0, fi_read(p.client, back.data(), len, nullptr, 0, 0, key, nullptr));
	completion(p.client_cq);
	EXPECT_EQ(src, back);
}

// fi_close(mr) while a transfer streams through the ring: the rest is refused (FI_EINVAL, as
// for a key that does not exist), and nothing more is copied into or out of the region.
TEST_F(ShmRma, RegionClosedMidTransfer)
{
	const size_t len = size_t(8) << 20; // thousands of slots: far more than one pass moves
	std::vector<uint8_t> target(len, 0), src = pattern(len, 13);
	uint64_t key = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 18);
	int ctx = 0;
	ASSERT_EQ(0, fi_write(p.client, src.data(), len, nullptr, 0, 0, key, &ctx));
	fi_cq_data_entry e;
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(p.client_cq, &e, 1)); // one progress pass
	ASSERT_EQ(0, fi_close(&regions.back()->fid));
	regions.pop_back();
	EXPECT_EQ(FI_EINVAL, error_completion(&ctx));
	EXPECT_EQ(std::vector<uint8_t>(4096, 0), std::vector<uint8_t>(target.end() - 4096,
								       target.end()));
	EXPECT_EQ(0u, fi_cntr_read(remote_writes));

	std::vector<uint8_t> back(len, 0xee);
	key = reg(target, FI_REMOTE_READ, 19);
	ASSERT_EQ(0, fi_read(p.client, back.data(), len, nullptr, 0, 0, key, &ctx));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(p.client_cq, &e, 1));
	ASSERT_EQ(0, fi_close(&regions.back()->fid));
	regions.pop_back();
	EXPECT_EQ(FI_EINVAL, error_completion(&ctx));
	EXPECT_EQ(0u, fi_cntr_read(remote_reads));
	still_connected();
}

TEST_F(ShmRma, ManyOutstanding)
{
	// More operations than the ring has slots, reads and writes mixed, all in flight.
	std::vector<uint8_t> target = pattern(1 << 16, 11);
	uint64_t key = reg(target, FI_REMOTE_WRITE | FI_REMOTE_READ, 17);
	const int n = 200;
	std::vector<std::vector<uint8_t>> reads(n, std::vector<uint8_t>(256, 0));
	std::vector<uint8_t> src = pattern(256, 12);
	for (int i = 0; i < n; i++) {
		ssize_t ret;
		if (i % 2)
			ret = fi_read(p.client, reads[i].data(), 256, nullptr, 0, i * 256, key,
				      nullptr);
		else
			ret = fi_write(p.client, src.data(), 256, nullptr, 0, i * 256, key,
				       nullptr);
		ASSERT_EQ(0, ret) << i;
	}
	for (int i = 0; i < n; i++)
		completion(p.client_cq);
	for (int i = 1; i < n; i += 2)
		EXPECT_EQ(0, memcmp(reads[i].data(), pattern(1 << 16, 11).data() + i * 256, 256));
	for (int i = 0; i < n; i += 2)
		EXPECT_EQ(0, memcmp(target.data() + i * 256, src.data(), 256));
}

TEST_F(ShmRma, BadArguments)
{
	std::vector<uint8_t> buf(64);
	fi_rma_iov rma[2] = {{0, 32, 1}, {32, 32, 1}};
	iovec iov{buf.data(), 64};
	fi_msg_rma msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.rma_iov = rma;
	msg.rma_iov_count = 2; // rma_iov_limit is 1
	EXPECT_EQ(-FI_EINVAL, fi_writemsg(p.client, &msg, 0));
	rma[0].len = 63;       // lengths disagree
	msg.rma_iov_count = 1;
	EXPECT_EQ(-FI_EINVAL, fi_readmsg(p.client, &msg, 0));
	EXPECT_EQ(-FI_EINVAL, fi_writemsg(p.client, nullptr, 0));
	EXPECT_EQ(-FI_EBADFLAGS, fi_writemsg(p.client, &msg, FI_MULTI_RECV));
}

} // namespace
