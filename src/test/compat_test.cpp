// The old-ABI entry points, called the way an old binary would: through versioned symbols of
// the built libfabric.so with structs of the old, smaller layouts.
#include "src/compat_layouts.h"

#include <rdma/fabric.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>

namespace {

namespace old = ofi::core::abi_1_0;

class CompatTest : public ::testing::Test {
protected:
	void *lib = nullptr;

	void SetUp() override
	{
		const char *build = std::getenv("top_builddir");
		std::string path = std::string(build ? build : ".") + "/.libs/libfabric.so.1";
		// NODELETE: the library keeps its registries for the life of the process.
		lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		if (!lib)
			GTEST_SKIP() << "cannot load " << path << ": " << dlerror();
	}
	void TearDown() override
	{
		if (lib)
			dlclose(lib);
	}

	template <typename Fn>
	Fn symbol(const char *name, const char *version)
	{
		void *sym = dlvsym(lib, name, version);
		EXPECT_NE(sym, nullptr) << name << "@" << version;
		return reinterpret_cast<Fn>(sym);
	}
};

// Allocates exactly the old size, so reading past it would be caught by valgrind/ASan.
template <typename T>
T *exact_alloc()
{
	return static_cast<T *>(calloc(1, sizeof(T)));
}

TEST_F(CompatTest, AllVersionedSymbolsResolve)
{
	for (const char *v : {"FABRIC_1.0", "FABRIC_1.1", "FABRIC_1.2", "FABRIC_1.3"}) {
		EXPECT_NE(dlvsym(lib, "fi_getinfo", v), nullptr) << v;
		EXPECT_NE(dlvsym(lib, "fi_dupinfo", v), nullptr) << v;
		EXPECT_NE(dlvsym(lib, "fi_freeinfo", v), nullptr) << v;
	}
	EXPECT_NE(dlvsym(lib, "fi_fabric", "FABRIC_1.0"), nullptr);
	EXPECT_NE(dlvsym(lib, "fi_fabric", "FABRIC_1.1"), nullptr);
	// The default versions are the current ones.
	EXPECT_EQ(dlsym(lib, "fi_getinfo"), dlvsym(lib, "fi_getinfo", "FABRIC_1.3"));
	EXPECT_EQ(dlsym(lib, "fi_fabric"), dlvsym(lib, "fi_fabric", "FABRIC_1.1"));
}

TEST_F(CompatTest, DupinfoFromAbi10LayoutWidens)
{
	using Dup = fi_info *(*)(const old::fi_info *);
	using Free = void (*)(fi_info *);
	auto dup = symbol<Dup>("fi_dupinfo", "FABRIC_1.0");
	auto free_info = symbol<Free>("fi_freeinfo", "FABRIC_1.0");
	ASSERT_TRUE(dup && free_info);

	auto *in = exact_alloc<old::fi_info>();
	in->caps = FI_MSG;
	in->mode = FI_CONTEXT;
	in->tx_attr = exact_alloc<old::fi_tx_attr>();
	in->tx_attr->inject_size = 33;
	in->tx_attr->rma_iov_limit = 2;
	in->ep_attr = exact_alloc<old::fi_ep_attr>();
	in->ep_attr->type = FI_EP_RDM;
	in->ep_attr->rx_ctx_cnt = 3;
	in->domain_attr = exact_alloc<old::fi_domain_attr>();
	in->domain_attr->name = const_cast<char *>("olddom");
	in->domain_attr->mr_mode = FI_MR_BASIC;
	in->domain_attr->max_ep_srx_ctx = 9;
	in->fabric_attr = exact_alloc<old::fi_fabric_attr>();
	in->fabric_attr->prov_name = const_cast<char *>("tcp");
	in->fabric_attr->prov_version = 5;
	// Garbage in the old struct's tail padding must not become an api_version.
	memset(reinterpret_cast<char *>(in->fabric_attr) + offsetof(fi_fabric_attr, api_version),
	       0xab, sizeof(old::fi_fabric_attr) - offsetof(fi_fabric_attr, api_version));

	fi_info *out = dup(in);
	ASSERT_NE(out, nullptr);
	EXPECT_EQ(out->caps, FI_MSG);
	EXPECT_EQ(out->tx_attr->inject_size, 33u);
	EXPECT_EQ(out->tx_attr->rma_iov_limit, 2u);
	EXPECT_EQ(out->tx_attr->tclass, 0u);
	EXPECT_EQ(out->rx_attr, nullptr);
	EXPECT_EQ(out->ep_attr->type, FI_EP_RDM);
	EXPECT_EQ(out->ep_attr->rx_ctx_cnt, 3u);
	EXPECT_EQ(out->ep_attr->auth_key, nullptr);
	EXPECT_STREQ(out->domain_attr->name, "olddom");
	EXPECT_NE(out->domain_attr->name, in->domain_attr->name);
	EXPECT_EQ(out->domain_attr->max_ep_srx_ctx, 9u);
	EXPECT_EQ(out->domain_attr->cntr_cnt, 0u);
	EXPECT_STREQ(out->fabric_attr->prov_name, "tcp");
	EXPECT_EQ(out->fabric_attr->prov_version, 5u);
	EXPECT_EQ(out->fabric_attr->api_version, 0u);
	EXPECT_EQ(out->nic, nullptr);
	// The result starts with the old layout, so the old binary reads its own fields.
	auto *as_old = reinterpret_cast<old::fi_info *>(out);
	EXPECT_EQ(as_old->ep_attr->rx_ctx_cnt, 3u);
	free_info(out);

	free(in->tx_attr);
	free(in->ep_attr);
	free(in->domain_attr);
	free(in->fabric_attr);
	free(in);
}

TEST_F(CompatTest, DupinfoFromAbi11LayoutHasNoNic)
{
	using Dup = fi_info *(*)(const fi_info *);
	auto dup = symbol<Dup>("fi_dupinfo", "FABRIC_1.1");
	ASSERT_TRUE(dup);
	// An ABI 1.1 info ends before 'nic'; allocate exactly that much.
	auto *in = static_cast<fi_info *>(calloc(1, ofi::core::abi_1_1::fi_info_size));
	in->caps = FI_RMA;
	fi_info *out = dup(in);
	ASSERT_NE(out, nullptr);
	EXPECT_EQ(out->caps, FI_RMA);
	EXPECT_EQ(out->nic, nullptr);
	fi_freeinfo(out);
	free(in);
	fi_info *fresh = dup(nullptr); // fi_allocinfo of an old binary
	EXPECT_NE(fresh, nullptr);
	fi_freeinfo(fresh);
}

TEST_F(CompatTest, GetinfoWithOldHintsReachesTheCore)
{
	using Getinfo = int (*)(uint32_t, const char *, const char *, uint64_t,
				const old::fi_info *, fi_info **);
	auto getinfo = symbol<Getinfo>("fi_getinfo", "FABRIC_1.0");
	ASSERT_TRUE(getinfo);
	auto *hints = exact_alloc<old::fi_info>();
	hints->fabric_attr = exact_alloc<old::fi_fabric_attr>();
	hints->fabric_attr->prov_name = const_cast<char *>("no-such-provider");
	fi_info *info = nullptr;
	EXPECT_EQ(getinfo(FI_VERSION(1, 0), nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
	EXPECT_EQ(getinfo(FI_VERSION(1, 99), nullptr, nullptr, 0, hints, &info), -FI_ENOSYS);
	free(hints->fabric_attr);
	free(hints);

	using Getinfo11 = int (*)(uint32_t, const char *, const char *, uint64_t,
				  const fi_info *, fi_info **);
	auto getinfo11 = symbol<Getinfo11>("fi_getinfo", "FABRIC_1.1");
	ASSERT_TRUE(getinfo11);
	EXPECT_EQ(getinfo11(FI_VERSION(1, 99), nullptr, nullptr, 0, nullptr, &info), -FI_ENOSYS);
}

TEST_F(CompatTest, FabricFromAbi10Attr)
{
	using Fabric = int (*)(const old::fi_fabric_attr *, fid_fabric **, void *);
	auto fabric = symbol<Fabric>("fi_fabric", "FABRIC_1.0");
	ASSERT_TRUE(fabric);
	auto *attr = exact_alloc<old::fi_fabric_attr>();
	attr->prov_name = const_cast<char *>("no-such-provider");
	fid_fabric *fab = nullptr;
	EXPECT_EQ(fabric(attr, &fab, nullptr), -FI_ENODEV);
	EXPECT_EQ(fabric(nullptr, &fab, nullptr), -FI_EINVAL);
	free(attr);
}

} // namespace
