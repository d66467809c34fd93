// MR map: range and access checks (including offsets that would overflow), key handling,
// and registration through fi_mr_reg.
#include "prov/util/test/fake_provider.h"

#include "prov/util/memory_region.h"
#include "prov/util/mr_map.h"

#include <cstdint>

namespace {

using fake::Fixture;

TEST(MrMap, RangeAndAccessWithVirtualAddresses)
{
	util::MrMap map(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR);
	static uint8_t buffer[100];
	util::MrRegion region;
	region.base = buffer;
	region.len = sizeof(buffer);
	region.access = FI_REMOTE_READ;
	ASSERT_EQ(map.insert(region, 0), 0);
	uint64_t base = reinterpret_cast<uintptr_t>(buffer);
	void *target = nullptr;
	EXPECT_EQ(map.lookup(region.key, base + 10, 90, FI_REMOTE_READ, &target), 0);
	EXPECT_EQ(target, buffer + 10);
	EXPECT_EQ(map.lookup(region.key, base + 10, 91, FI_REMOTE_READ, &target), -FI_EINVAL);
	EXPECT_EQ(map.lookup(region.key, base - 1, 1, FI_REMOTE_READ, &target), -FI_EINVAL);
	EXPECT_EQ(map.lookup(region.key, base, 1, FI_REMOTE_WRITE, &target), -FI_EACCES);
	EXPECT_EQ(map.lookup(region.key + 1, base, 1, FI_REMOTE_READ, &target), -FI_EINVAL);
	// Lengths and addresses chosen so that a naive addr + len wraps around.
	EXPECT_EQ(map.lookup(region.key, base + 10, SIZE_MAX - 5, FI_REMOTE_READ, &target),
		  -FI_EINVAL);
	EXPECT_EQ(map.lookup(region.key, UINT64_MAX, 2, FI_REMOTE_READ, &target), -FI_EINVAL);
	EXPECT_EQ(map.lookup(region.key, base + 100, 0, FI_REMOTE_READ, &target), 0);
	EXPECT_EQ(map.remove(region.key), 0);
	EXPECT_EQ(map.lookup(region.key, base, 1, FI_REMOTE_READ, &target), -FI_EINVAL);
}

TEST(MrMap, OffsetAddressingAndRequestedKeys)
{
	util::MrMap map(0);
	static uint8_t buffer[64];
	util::MrRegion region;
	region.base = buffer;
	region.len = sizeof(buffer);
	region.access = FI_REMOTE_WRITE;
	region.offset = 1000;
	ASSERT_EQ(map.insert(region, 77), 0);
	EXPECT_EQ(region.key, 77u);
	util::MrRegion second = region;
	EXPECT_EQ(map.insert(second, 77), -FI_ENOKEY);
	void *target;
	EXPECT_EQ(map.lookup(77, 1000 + 60, 4, FI_REMOTE_WRITE, &target), 0);
	EXPECT_EQ(target, buffer + 60);
	EXPECT_EQ(map.lookup(77, 999, 1, FI_REMOTE_WRITE, &target), -FI_EINVAL);
	EXPECT_EQ(map.lookup(77, 1000 + 61, 4, FI_REMOTE_WRITE, &target), -FI_EINVAL);
}

TEST_F(Fixture, MrRegThroughTheDomain)
{
	static uint8_t buffer[32];
	struct fid_mr *a = nullptr, *b = nullptr;
	ASSERT_EQ(fi_mr_reg(domain, buffer, sizeof(buffer), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
			    0, 0, &a, this),
		  0);
	ASSERT_EQ(fi_mr_reg(domain, buffer, 16, FI_REMOTE_READ, 0, 0, 0, &b, nullptr), 0);
	EXPECT_NE(fi_mr_key(a), fi_mr_key(b));  // provider-assigned keys differ
	EXPECT_EQ(util::MemoryRegion::from_desc(*domain_object, fi_mr_desc(a))->key(), fi_mr_key(a));
	int not_an_mr = 0;
	EXPECT_EQ(util::MemoryRegion::from_desc(*domain_object, &not_an_mr), nullptr);
	void *target;
	EXPECT_EQ(domain_object->mr_map().lookup(fi_mr_key(b),
						 reinterpret_cast<uintptr_t>(buffer) + 8, 8,
						 FI_REMOTE_WRITE, &target),
		  -FI_EACCES);
	EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY);
	uint64_t key_a = fi_mr_key(a);
	EXPECT_EQ(fi_close(&a->fid), 0);
	EXPECT_FALSE(domain_object->mr_map().find(key_a, nullptr));
	EXPECT_EQ(fi_close(&b->fid), 0);

	struct iovec two[2] = {{buffer, 8}, {buffer + 8, 8}};
	EXPECT_EQ(fi_mr_regv(domain, two, 2, FI_READ, 0, 0, 0, &a, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_mr_reg(domain, buffer, 8, 1ULL << 40, 0, 0, 0, &a, nullptr), -FI_EINVAL);
}

} // namespace
