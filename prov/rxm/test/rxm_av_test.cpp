// Address vectors as applications see them (fi_av(3) of libfabric 1.17), on tcp (util's AV)
// and tcp;ofi_rxm (RxmAv, util's AV with rxm's reverse lookup): FI_EVENT inserts report on
// the bound EQ (failures as error entries), FI_SYNC_ERR fills the per-address array, an
// address inserted twice is one entry until removed twice, removed slots are reused so a
// server whose peers come and go stays flat (issue 17 item 2).
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "src/registry.h"
#include "prov/rxm/test/rxm_test_provider.h"
#include "test/leaks/process_usage.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

namespace {

using rxm_test::ipv4;

#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;

// One provider's fabric and domain, on 127.0.0.1 with IPv4 addresses.
class AvTest : public ::testing::TestWithParam<const char *> {
protected:
	void SetUp() override
	{
		fi_info *hints = fi_allocinfo();
		ASSERT_NE(hints, nullptr);
		const std::string prov = GetParam();
		hints->fabric_attr->prov_name = strdup(prov.c_str());
		hints->ep_attr->type = prov.find(';') != std::string::npos ? FI_EP_RDM : FI_EP_MSG;
		hints->addr_format = FI_SOCKADDR_IN;
		hints->caps = FI_MSG;
		int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, 0, hints, &info_);
		fi_freeinfo(hints);
		if (ret == -FI_ENODATA)
			GTEST_SKIP() << GetParam() << " is not built";
		ASSERT_EQ(ret, 0);
		ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
		ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
	}

	void TearDown() override
	{
		if (av_) {
			EXPECT_EQ(fi_close(&av_->fid), 0);
		}
		if (eq_) {
			EXPECT_EQ(fi_close(&eq_->fid), 0);
		}
		if (domain_) {
			EXPECT_EQ(fi_close(&domain_->fid), 0);
		}
		if (fabric_) {
			EXPECT_EQ(fi_close(&fabric_->fid), 0);
		}
		fi_freeinfo(info_);
	}

	int open_av(uint64_t flags)
	{
		fi_av_attr attr{};
		attr.type = FI_AV_TABLE;
		attr.flags = flags;
		return fi_av_open(domain_, &attr, &av_, nullptr);
	}

	// An EQ of this fabric bound to the AV.
	void bind_eq()
	{
		fi_eq_attr attr{};
		attr.wait_obj = FI_WAIT_UNSPEC;
		ASSERT_EQ(fi_eq_open(fabric_, &attr, &eq_, nullptr), 0);
		ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
	}

	fi_info *info_ = nullptr;
	fid_fabric *fabric_ = nullptr;
	fid_domain *domain_ = nullptr;
	fid_av *av_ = nullptr;
	fid_eq *eq_ = nullptr;
};

TEST_P(AvTest, EventInsertCompletesOnTheBoundEq)
{
	ASSERT_EQ(open_av(FI_EVENT), 0);
	sockaddr_in addrs[2] = {ipv4("127.0.0.1", 4100), ipv4("127.0.0.1", 4101)};
	fi_addr_t fi_addrs[2] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
	int context;
	// Without an EQ there is nowhere to report to.
	EXPECT_EQ(fi_av_insert(av_, addrs, 2, fi_addrs, 0, &context), -FI_ENOEQ);
	bind_eq();
	EXPECT_EQ(fi_av_insert(av_, addrs, 2, fi_addrs, 0, &context), 0);
	uint32_t event = 0;
	fi_eq_entry entry{};
	ASSERT_EQ(fi_eq_sread(eq_, &event, &entry, sizeof(entry), 5000, 0),
		  static_cast<ssize_t>(sizeof(entry)));
	EXPECT_EQ(event, static_cast<uint32_t>(FI_AV_COMPLETE));
	EXPECT_EQ(entry.fid, &av_->fid);
	EXPECT_EQ(entry.context, &context);
	EXPECT_EQ(entry.data, 2u);
	EXPECT_NE(fi_addrs[0], FI_ADDR_NOTAVAIL);
	EXPECT_NE(fi_addrs[1], FI_ADDR_NOTAVAIL);
	sockaddr_in out{};
	size_t len = sizeof(out);
	ASSERT_EQ(fi_av_lookup(av_, fi_addrs[1], &out, &len), 0);
	EXPECT_EQ(out.sin_port, addrs[1].sin_port);
}

TEST_P(AvTest, EventInsertReportsEachFailedAddressAsAnErrorEntry)
{
	ASSERT_EQ(open_av(FI_EVENT), 0);
	bind_eq();
	sockaddr_in addrs[2] = {ipv4("127.0.0.1", 4110), ipv4("127.0.0.1", 4111)};
	addrs[1].sin_family = AF_UNIX; // not an address of this AV's format
	fi_addr_t fi_addrs[2];
	int context;
	EXPECT_EQ(fi_av_insert(av_, addrs, 2, fi_addrs, 0, &context), 0);
	EXPECT_NE(fi_addrs[0], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fi_addrs[1], FI_ADDR_NOTAVAIL);
	uint32_t event = 0;
	fi_eq_entry entry{};
	ASSERT_EQ(fi_eq_sread(eq_, &event, &entry, sizeof(entry), 5000, 0), -FI_EAVAIL);
	fi_eq_err_entry err{};
	ASSERT_EQ(fi_eq_readerr(eq_, &err, 0), static_cast<ssize_t>(sizeof(err)));
	EXPECT_EQ(err.fid, &av_->fid);
	EXPECT_EQ(err.context, &context);
	EXPECT_EQ(err.data, 1u); // the failed address's index
	EXPECT_EQ(err.err, FI_EINVAL);
	ASSERT_EQ(fi_eq_sread(eq_, &event, &entry, sizeof(entry), 5000, 0),
		  static_cast<ssize_t>(sizeof(entry)));
	EXPECT_EQ(event, static_cast<uint32_t>(FI_AV_COMPLETE));
	EXPECT_EQ(entry.data, 1u); // one inserted
	// Per-address errors belong to synchronous inserts.
	int errors[1];
	EXPECT_EQ(fi_av_insert(av_, addrs, 1, fi_addrs, FI_SYNC_ERR, errors), -FI_EBADFLAGS);
}

TEST_P(AvTest, SyncErrFillsThePerAddressArray)
{
	ASSERT_EQ(open_av(0), 0);
	sockaddr_in addrs[3] = {ipv4("127.0.0.1", 4120), ipv4("127.0.0.1", 4121),
				ipv4("127.0.0.1", 4122)};
	addrs[1].sin_family = AF_UNIX;
	fi_addr_t fi_addrs[3];
	int errors[3] = {-1, -1, -1};
	// A malformed address has no known length: it and everything after it fail.
	EXPECT_EQ(fi_av_insert(av_, addrs, 3, fi_addrs, FI_SYNC_ERR, errors), 1);
	EXPECT_EQ(errors[0], 0);
	EXPECT_EQ(errors[1], -FI_EINVAL);
	EXPECT_EQ(errors[2], -FI_EINVAL);
	EXPECT_NE(fi_addrs[0], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fi_addrs[1], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fi_addrs[2], FI_ADDR_NOTAVAIL);
	// All good: all zero.
	int good[2] = {-1, -1};
	sockaddr_in more[2] = {ipv4("127.0.0.1", 4123), ipv4("127.0.0.1", 4124)};
	EXPECT_EQ(fi_av_insert(av_, more, 2, fi_addrs, FI_SYNC_ERR, good), 2);
	EXPECT_EQ(good[0], 0);
	EXPECT_EQ(good[1], 0);
}

TEST_P(AvTest, AnAddressInsertedTwiceIsOneEntryUntilRemovedTwice)
{
	ASSERT_EQ(open_av(0), 0);
	sockaddr_in a = ipv4("127.0.0.1", 4130);
	sockaddr_in padded = a; // same peer, other padding bytes
	memset(padded.sin_zero, 0x5a, sizeof(padded.sin_zero));
	fi_addr_t first = FI_ADDR_NOTAVAIL, second = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(av_, &a, 1, &first, 0, nullptr), 1);
	ASSERT_EQ(fi_av_insert(av_, &padded, 1, &second, 0, nullptr), 1);
	EXPECT_EQ(second, first);
	sockaddr_in out{};
	size_t len = sizeof(out);
	ASSERT_EQ(fi_av_remove(av_, &first, 1, 0), 0);
	EXPECT_EQ(fi_av_lookup(av_, second, &out, &len), 0); // one use left
	EXPECT_EQ(out.sin_port, a.sin_port);
	ASSERT_EQ(fi_av_remove(av_, &second, 1, 0), 0);
	len = sizeof(out);
	EXPECT_NE(fi_av_lookup(av_, second, &out, &len), 0); // gone
	EXPECT_EQ(fi_av_remove(av_, &second, 1, 0), -FI_EINVAL);
	fi_addr_t again = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(av_, &a, 1, &again, 0, nullptr), 1);
	EXPECT_EQ(again, first); // its slot is reused
	len = sizeof(out);
	EXPECT_EQ(fi_av_lookup(av_, again, &out, &len), 0);
}

TEST_P(AvTest, RemovedSlotsAreReusedLowestFirst)
{
	ASSERT_EQ(open_av(0), 0);
	sockaddr_in addrs[4] = {ipv4("127.0.0.1", 4140), ipv4("127.0.0.1", 4141),
				ipv4("127.0.0.1", 4142), ipv4("127.0.0.1", 4143)};
	fi_addr_t fi_addrs[4];
	ASSERT_EQ(fi_av_insert(av_, addrs, 3, fi_addrs, 0, nullptr), 3);
	fi_addr_t gone[2] = {fi_addrs[2], fi_addrs[0]};
	ASSERT_EQ(fi_av_remove(av_, gone, 2, 0), 0);
	fi_addr_t reused[2];
	ASSERT_EQ(fi_av_insert(av_, &addrs[3], 1, &reused[0], 0, nullptr), 1);
	ASSERT_EQ(fi_av_insert(av_, &addrs[0], 1, &reused[1], 0, nullptr), 1);
	EXPECT_EQ(reused[0], fi_addrs[0]);
	EXPECT_EQ(reused[1], fi_addrs[2]);
}

// A server whose clients come and go: 2 million insert/remove pairs of ever new addresses
// reuse one slot and leave the process's size where it was (before: +129 MB).
TEST_P(AvTest, PeersComingAndGoingKeepTheAvFlat)
{
	ASSERT_EQ(open_av(0), 0);
	sockaddr_in warm = ipv4("127.0.0.1", 1);
	fi_addr_t fi_addr;
	ASSERT_EQ(fi_av_insert(av_, &warm, 1, &fi_addr, 0, nullptr), 1);
	ASSERT_EQ(fi_av_remove(av_, &fi_addr, 1, 0), 0);
	long before = process_usage::resident_kib();
	constexpr unsigned kCycles = 2000000;
	for (unsigned i = 0; i < kCycles; i++) {
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (i >> 16));
		a.sin_port = htons(static_cast<uint16_t>(i));
		ASSERT_EQ(fi_av_insert(av_, &a, 1, &fi_addr, 0, nullptr), 1);
		ASSERT_EQ(fi_addr, 0u) << "cycle " << i;
		ASSERT_EQ(fi_av_remove(av_, &fi_addr, 1, 0), 0);
	}
	long after = process_usage::resident_kib();
	ASSERT_GT(before, 0);
#ifndef __SANITIZE_ADDRESS__ // its quarantine keeps freed blocks resident on purpose
	EXPECT_LT(after - before, 4096) << "KiB grown over " << kCycles << " cycles";
#endif
}

INSTANTIATE_TEST_SUITE_P(Providers, AvTest, ::testing::Values("tcp", "tcp;ofi_rxm"),
			 [](const ::testing::TestParamInfo<const char *> &info) {
				 return std::string(info.param).find(';') != std::string::npos
						? std::string("tcp_ofi_rxm")
						: std::string(info.param);
			 });

} // namespace
