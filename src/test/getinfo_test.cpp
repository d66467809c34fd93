// fi_getinfo against fake providers: hint matching, names, FI_PROVIDER, layering, flags.
#include "src/test/fake_providers.h"

#include <rdma/fabric.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t api = FI_VERSION(1, 17);

// Hints that accept every mode the fakes need.
fi_info *permissive_hints()
{
	fi_info *hints = fi_allocinfo();
	hints->mode = ~0ULL;
	hints->domain_attr->mode = ~0ULL;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	return hints;
}

struct Result {
	int ret;
	std::vector<std::string> names;
	fi_info *info = nullptr;
	~Result() { fi_freeinfo(info); }
};

void run(Result &r, const fi_info *hints, uint32_t version = api, uint64_t flags = 0,
	 const char *node = nullptr, const char *service = nullptr)
{
	r.ret = fi_getinfo(version, node, service, flags, hints, &r.info);
	for (fi_info *cur = r.info; cur; cur = cur->next)
		r.names.push_back(std::string(cur->fabric_attr->prov_name) + "/" +
				  (cur->ep_attr->type == FI_EP_MSG ? "msg" : "rdm"));
}

using Names = std::vector<std::string>;

class GetinfoTest : public ::testing::Test {
protected:
	fake::Installed fakes;
	fi_info *hints = permissive_hints();
	~GetinfoTest() override { fi_freeinfo(hints); }
};

TEST_F(GetinfoTest, NoHintsListsLayeredFirstThenCores)
{
	Result r;
	run(r, nullptr);
	ASSERT_EQ(r.ret, 0);
	EXPECT_EQ(r.names, (Names{"fake;ofi_util/rdm", "other;ofi_util/rdm", "fake/msg",
				  "fake/rdm", "other/msg"}));
	// The core fills in what providers leave out.
	fi_info *fake_msg = r.info->next->next;
	EXPECT_EQ(fake_msg->fabric_attr->prov_version, FI_VERSION(3, 1));
	EXPECT_EQ(fake_msg->fabric_attr->api_version, api);
	EXPECT_EQ(fake::observed.util_calls, 1);
}

TEST_F(GetinfoTest, RejectsBadArguments)
{
	fi_info *info = reinterpret_cast<fi_info *>(0x1);
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 18), nullptr, nullptr, 0, nullptr, &info), -FI_ENOSYS);
	EXPECT_EQ(info, nullptr);
	EXPECT_EQ(fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, nullptr, &info), -FI_ENOSYS);
	EXPECT_EQ(fi_getinfo(api, nullptr, nullptr, 0, nullptr, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_getinfo(api, nullptr, nullptr, FI_MSG, nullptr, &info), -FI_EBADFLAGS);
	EXPECT_EQ(fake::observed.core_calls, 0);
}

TEST_F(GetinfoTest, OlderVersionsAreAccepted)
{
	Result r;
	run(r, hints, FI_VERSION(1, 0));
	ASSERT_EQ(r.ret, 0);
	EXPECT_EQ(r.info->fabric_attr->api_version, FI_VERSION(1, 0));
}

TEST_F(GetinfoTest, EndpointTypeFilters)
{
	hints->ep_attr->type = FI_EP_MSG;
	Result r;
	run(r, hints);
	ASSERT_EQ(r.ret, 0);
	EXPECT_EQ(r.names, (Names{"fake/msg", "other/msg"}));
	hints->ep_attr->type = FI_EP_DGRAM;
	Result none;
	run(none, hints);
	EXPECT_EQ(none.ret, -FI_ENODATA);
	EXPECT_EQ(none.info, nullptr);
}

TEST_F(GetinfoTest, CapsAreRequiredAndNarrowed)
{
	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_MSG;
	Result r;
	run(r, hints);
	ASSERT_EQ(r.ret, 0);
	// Asked primary cap, all modifiers (none asked), and the offered secondary caps.
	uint64_t expected = FI_MSG | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
			    FI_REMOTE_WRITE | FI_MULTI_RECV | FI_SOURCE;
	EXPECT_EQ(r.info->caps, expected);
	EXPECT_EQ(r.info->tx_attr->caps & FI_RMA, 0u);

	hints->caps = FI_MSG | FI_SEND;
	Result send_only;
	run(send_only, hints);
	ASSERT_EQ(send_only.ret, 0);
	EXPECT_EQ(send_only.info->caps & (FI_SEND | FI_RECV), FI_SEND);

	hints->caps = FI_MSG | FI_ATOMIC;
	Result none;
	run(none, hints);
	EXPECT_EQ(none.ret, -FI_ENODATA);

	hints->caps = FI_MSG | FI_RMA_EVENT; // secondary cap not offered
	Result no_secondary;
	run(no_secondary, hints);
	EXPECT_EQ(no_secondary.ret, -FI_ENODATA);
}

TEST_F(GetinfoTest, UnacceptedModesExclude)
{
	hints->mode = 0; // the fake cores need FI_CONTEXT, the layered infos nothing
	Result r;
	run(r, hints);
	ASSERT_EQ(r.ret, 0);
	EXPECT_EQ(r.names, (Names{"fake;ofi_util/rdm", "other;ofi_util/rdm"}));
	hints->mode = FI_CONTEXT;
	Result all;
	run(all, hints);
	EXPECT_EQ(all.names.size(), 5u);
}

TEST_F(GetinfoTest, MrModeBitsRequiredByProviderMustBeAccepted)
{
	hints->mode = FI_CONTEXT; // FI_LOCAL_MR in the mode would stand in for FI_MR_LOCAL
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	Result r; // FI_MR_LOCAL missing
	run(r, hints);
	EXPECT_EQ(r.ret, -FI_ENODATA);
	hints->domain_attr->mr_mode |= FI_MR_LOCAL;
	Result ok;
	run(ok, hints);
	ASSERT_EQ(ok.ret, 0);
	EXPECT_EQ(ok.info->domain_attr->mr_mode,
		  FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
}

TEST_F(GetinfoTest, LegacyMrModesBeforeApi15)
{
	hints->ep_attr->type = FI_EP_MSG; // only the fake cores, which need local registration
	hints->mode = FI_CONTEXT | FI_LOCAL_MR;
	hints->domain_attr->mr_mode = FI_MR_BASIC;
	Result basic;
	run(basic, hints, FI_VERSION(1, 4));
	ASSERT_EQ(basic.ret, 0);
	EXPECT_EQ(basic.info->domain_attr->mr_mode, FI_MR_BASIC);
	EXPECT_TRUE(basic.info->mode & FI_LOCAL_MR);

	hints->domain_attr->mr_mode = FI_MR_SCALABLE;
	Result scalable;
	run(scalable, hints, FI_VERSION(1, 4));
	EXPECT_EQ(scalable.ret, -FI_ENODATA);

	hints->domain_attr->mr_mode = FI_MR_UNSPEC;
	hints->mode = FI_CONTEXT; // no FI_LOCAL_MR: the fakes need local registration
	Result no_local;
	run(no_local, hints, FI_VERSION(1, 4));
	EXPECT_EQ(no_local.ret, -FI_ENODATA);
}

TEST_F(GetinfoTest, AttributesBeyondProviderLimitsExclude)
{
	hints->ep_attr->type = FI_EP_MSG;
	auto expect_none = [&](const char *what) {
		Result r;
		run(r, hints);
		EXPECT_EQ(r.ret, -FI_ENODATA) << what;
	};
	auto expect_some = [&](const char *what) {
		Result r;
		run(r, hints);
		EXPECT_EQ(r.ret, 0) << what;
	};
	hints->tx_attr->size = 256;
	expect_some("tx size at limit");
	hints->tx_attr->size = 257;
	expect_none("tx size");
	hints->tx_attr->size = 0;
	hints->tx_attr->inject_size = 65;
	expect_none("inject size");
	hints->tx_attr->inject_size = 0;
	hints->tx_attr->iov_limit = 5;
	expect_none("tx iov limit");
	hints->tx_attr->iov_limit = 0;
	hints->tx_attr->msg_order = FI_ORDER_RAW;
	expect_none("msg order");
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	expect_some("offered msg order");
	hints->rx_attr->size = 1000;
	expect_none("rx size");
	hints->rx_attr->size = 0;
	hints->ep_attr->max_msg_size = (1 << 20) + 1;
	expect_none("max msg size");
	hints->ep_attr->max_msg_size = 0;
	hints->domain_attr->cq_cnt = 17;
	expect_none("cq count");
	hints->domain_attr->cq_cnt = 0;
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	expect_none("auto data progress from a manual provider");
	hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	hints->domain_attr->av_type = FI_AV_TABLE;
	expect_some("av type");
	hints->ep_attr->protocol = FI_PROTO_RXM;
	expect_none("protocol");
	hints->ep_attr->protocol = FI_PROTO_UNSPEC;
	hints->addr_format = FI_SOCKADDR;
	expect_some("any sockaddr");
	hints->addr_format = FI_SOCKADDR_IN6;
	expect_none("address format");
	hints->addr_format = FI_ADDR_STR;
	expect_none("string address format");
}

TEST_F(GetinfoTest, ThreadingModels)
{
	// The fakes are FI_THREAD_SAFE, so they serve every model; a provider that needs
	// domain-level serialization serves only applications that provide it.
	fake::threading = FI_THREAD_DOMAIN;
	hints->ep_attr->type = FI_EP_MSG;
	auto ret_for = [&](fi_threading model) {
		hints->domain_attr->threading = model;
		Result r;
		run(r, hints);
		return r.ret;
	};
	EXPECT_EQ(ret_for(FI_THREAD_DOMAIN), 0);
	EXPECT_EQ(ret_for(FI_THREAD_UNSPEC), 0);
	EXPECT_EQ(ret_for(FI_THREAD_COMPLETION), -FI_ENODATA);
	EXPECT_EQ(ret_for(FI_THREAD_ENDPOINT), -FI_ENODATA);
	EXPECT_EQ(ret_for(FI_THREAD_SAFE), -FI_ENODATA);
	fake::threading = FI_THREAD_COMPLETION;
	EXPECT_EQ(ret_for(FI_THREAD_DOMAIN), 0);
	EXPECT_EQ(ret_for(FI_THREAD_COMPLETION), 0);
	EXPECT_EQ(ret_for(FI_THREAD_FID), -FI_ENODATA);
}

TEST_F(GetinfoTest, ChosenDomainSettingsAreReported)
{
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->av_type = FI_AV_MAP;
	Result r;
	run(r, hints);
	ASSERT_EQ(r.ret, 0);
	EXPECT_EQ(r.info->domain_attr->threading, FI_THREAD_DOMAIN);
	EXPECT_EQ(r.info->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	EXPECT_EQ(r.info->domain_attr->av_type, FI_AV_MAP);
}

TEST_F(GetinfoTest, FabricAndDomainNames)
{
	hints->fabric_attr->name = strdup("fakenet");
	hints->domain_attr->name = strdup("fake0");
	Result r;
	run(r, hints);
	EXPECT_EQ(r.ret, 0);
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup("fake1");
	Result none;
	run(none, hints);
	EXPECT_EQ(none.ret, -FI_ENODATA);
}

TEST_F(GetinfoTest, ProviderNameHints)
{
	auto names_for = [&](const char *prov) {
		free(hints->fabric_attr->prov_name);
		hints->fabric_attr->prov_name = strdup(prov);
		Result r;
		run(r, hints);
		return r.names;
	};
	EXPECT_EQ(names_for("fake"), (Names{"fake;ofi_util/rdm", "fake/msg", "fake/rdm"}));
	EXPECT_EQ(names_for("ofi_util"), (Names{"fake;ofi_util/rdm", "other;ofi_util/rdm"}));
	EXPECT_EQ(names_for("fake;ofi_util"), (Names{"fake;ofi_util/rdm"}));
	EXPECT_EQ(names_for("ofi_util;fake"), (Names{"fake;ofi_util/rdm"}));
	EXPECT_EQ(names_for("other"), (Names{"other;ofi_util/rdm", "other/msg"}));
	EXPECT_EQ(names_for("nope"), Names{});
}

TEST_F(GetinfoTest, FiProviderEnvironment)
{
	auto names_with = [&](const char *value) {
		ScopedEnv env("FI_PROVIDER", value);
		Result r;
		run(r, nullptr);
		return r.names;
	};
	// A core name keeps the core and the layerings on it, as 1.17 does (FI_PROVIDER=tcp
	// with FI_EP_RDM gives tcp;ofi_rxm).
	EXPECT_EQ(names_with("fake"), (Names{"fake;ofi_util/rdm", "fake/msg", "fake/rdm"}));
	EXPECT_EQ(names_with("fake,other"), (Names{"fake;ofi_util/rdm", "other;ofi_util/rdm",
						   "fake/msg", "fake/rdm", "other/msg"}));
	// The utility provider still reaches the cores although they are not listed.
	EXPECT_EQ(names_with("ofi_util"), (Names{"fake;ofi_util/rdm", "other;ofi_util/rdm"}));
	EXPECT_EQ(names_with("fake;ofi_util"), (Names{"fake;ofi_util/rdm"}));
	EXPECT_EQ(names_with("ofi_util;other"), (Names{"other;ofi_util/rdm"}));
	EXPECT_EQ(names_with("^other"), (Names{"fake;ofi_util/rdm", "fake/msg", "fake/rdm"}));
	EXPECT_EQ(names_with("^ofi_util"), (Names{"fake/msg", "fake/rdm", "other/msg"}));
	EXPECT_EQ(names_with("nothing"), Names{});
}

TEST_F(GetinfoTest, ProvAttrOnlyListsProviders)
{
	Result r;
	run(r, nullptr, api, FI_PROV_ATTR_ONLY);
	ASSERT_EQ(r.ret, 0);
	ASSERT_EQ(r.names.size(), 3u);
	EXPECT_STREQ(r.info->fabric_attr->prov_name, "fake");
	EXPECT_EQ(r.info->fabric_attr->prov_version, FI_VERSION(3, 1));
	EXPECT_STREQ(r.info->next->next->fabric_attr->prov_name, "ofi_util");
	EXPECT_EQ(fake::observed.core_calls, 0);
}

TEST_F(GetinfoTest, NodeServiceAndFlagsReachProviders)
{
	Result r;
	run(r, hints, api, FI_SOURCE | FI_NUMERICHOST, "10.1.2.3", "4711");
	ASSERT_EQ(r.ret, 0);
	EXPECT_STREQ(fake::observed.node, "10.1.2.3");
	EXPECT_STREQ(fake::observed.service, "4711");
	EXPECT_EQ(fake::observed.flags, FI_SOURCE | FI_NUMERICHOST);
}

TEST_F(GetinfoTest, FabricGoesToTheNamedProvider)
{
	fi_fabric_attr attr{};
	fid_fabric *fabric = nullptr;
	attr.prov_name = const_cast<char *>("fake");
	EXPECT_EQ(fi_fabric(&attr, &fabric, nullptr), -FI_EAGAIN);
	attr.prov_name = const_cast<char *>("fake;ofi_util");
	EXPECT_EQ(fi_fabric(&attr, &fabric, nullptr), -FI_EBUSY);
	attr.prov_name = const_cast<char *>("ofi_util;fake");
	EXPECT_EQ(fi_fabric(&attr, &fabric, nullptr), -FI_EBUSY);
	attr.prov_name = const_cast<char *>("missing");
	EXPECT_EQ(fi_fabric(&attr, &fabric, nullptr), -FI_ENODEV);
	attr.prov_name = nullptr;
	EXPECT_EQ(fi_fabric(&attr, &fabric, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_fabric(nullptr, &fabric, nullptr), -FI_EINVAL);
	EXPECT_EQ(fake::observed.fabric_calls, 3);
}

TEST_F(GetinfoTest, ConcurrentCallersGetIndependentLists)
{
	std::atomic<int> failures{0};
	std::vector<std::thread> threads;
	for (int t = 0; t < 4; ++t)
		threads.emplace_back([&] {
			for (int i = 0; i < 50; ++i) {
				fi_info *info = nullptr;
				if (fi_getinfo(api, nullptr, nullptr, 0, nullptr, &info) != 0)
					++failures;
				int count = 0;
				for (fi_info *cur = info; cur; cur = cur->next)
					++count;
				if (count != 5)
					++failures;
				fi_freeinfo(info);
			}
		});
	for (std::thread &t : threads)
		t.join();
	EXPECT_EQ(failures.load(), 0);
}

TEST(CoreEntryPoints, VersionAndOpen)
{
	EXPECT_EQ(fi_version(), FI_VERSION(1, 17));
	fid *fid = nullptr;
	EXPECT_EQ(fi_open(FI_VERSION(1, 17), "mr_cache", nullptr, 0, 0, &fid, nullptr),
		  -FI_ENOSYS);
	EXPECT_EQ(fi_open(FI_VERSION(1, 17), nullptr, nullptr, 0, 0, &fid, nullptr), -FI_EINVAL);
}

} // namespace
