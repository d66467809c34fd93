// Address vectors as applications see them (fi_av(3) of libfabric 1.17), on tcp (util's AV)
// and tcp;ofi_rxm (RxmAv, util's AV with rxm's reverse lookup): FI_EVENT inserts report on
// the bound EQ, FI_SYNC_ERR fills the per-address array, an address inserted twice is one
// entry until removed twice, removed slots are reused.
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "src/registry.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

namespace {

#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;

sockaddr_in ipv4(const char *ip, uint16_t port)
{
	sockaddr_in in{};
	in.sin_family = AF_INET;
	in.sin_port = htons(port);
	inet_pton(AF_INET, ip, &in.sin_addr);
	return in;
}

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

INSTANTIATE_TEST_SUITE_P(Providers, AvTest, ::testing::Values("tcp", "tcp;ofi_rxm"),
			 [](const ::testing::TestParamInfo<const char *> &info) {
				 return std::string(info.param).find(';') != std::string::npos
						? std::string("tcp_ofi_rxm")
						: std::string(info.param);
			 });

} // namespace
