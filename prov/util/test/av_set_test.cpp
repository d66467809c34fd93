// AV sets (fi_av_set(3)): creation from a range, a stride or the universe, the set
// operations and their order rules, bad arguments, the collective address.
#include "prov/util/test/fake_provider.h"

#include "prov/util/av_set.h"

#include <arpa/inet.h>
#include <rdma/fi_collective.h>

#include <vector>

namespace {

using fake::Fixture;

class AvSetFixture : public Fixture {
protected:
	void SetUp() override
	{
		Fixture::SetUp();
		struct fi_av_attr attr{};
		attr.type = FI_AV_TABLE;
		ASSERT_EQ(fi_av_open(domain, &attr, &av, nullptr), 0);
		// Six peers: fi_addr 0..5.
		for (uint16_t i = 0; i < 6; ++i) {
			struct sockaddr_in sin{};
			sin.sin_family = AF_INET;
			sin.sin_port = htons(static_cast<uint16_t>(24000 + i));
			inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
			fi_addr_t a;
			ASSERT_EQ(fi_av_insert(av, &sin, 1, &a, 0, nullptr), 1);
			ASSERT_EQ(a, i);
		}
	}
	void TearDown() override
	{
		for (auto *s : sets)
			EXPECT_EQ(fi_close(&s->fid), 0);
		if (av) {
			EXPECT_EQ(fi_close(&av->fid), 0);
		}
		Fixture::TearDown();
	}

	// Opens a set; nullptr (and *ret set) on failure.
	struct fid_av_set *open_set(fi_addr_t start, fi_addr_t end, uint64_t stride,
				    uint64_t flags = 0, size_t count = 0, int *ret = nullptr)
	{
		struct fi_av_set_attr attr{};
		attr.count = count;
		attr.start_addr = start;
		attr.end_addr = end;
		attr.stride = stride;
		attr.flags = flags;
		struct fid_av_set *set = nullptr;
		int r = fi_av_set(av, &attr, &set, nullptr);
		if (ret)
			*ret = r;
		if (r == 0)
			sets.push_back(set);
		return r == 0 ? set : nullptr;
	}
	struct fid_av_set *empty_set()
	{
		return open_set(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0);
	}
	static std::vector<fi_addr_t> members(struct fid_av_set *set)
	{
		auto *s = util::fid_cast<util::AvSet>(&set->fid, FI_CLASS_AV_SET);
		return s ? s->members() : std::vector<fi_addr_t>{FI_ADDR_NOTAVAIL};
	}

	struct fid_av *av = nullptr;
	std::vector<struct fid_av_set *> sets;
};

using V = std::vector<fi_addr_t>;

TEST_F(AvSetFixture, RangeStrideAndUniverse)
{
	EXPECT_EQ(members(open_set(0, 5, 1)), (V{0, 1, 2, 3, 4, 5}));
	EXPECT_EQ(members(open_set(0, 5, 2)), (V{0, 2, 4}));  // every second rank
	EXPECT_EQ(members(open_set(1, 5, 3)), (V{1, 4}));
	EXPECT_EQ(members(open_set(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, FI_UNIVERSE)),
		  (V{0, 1, 2, 3, 4, 5}));
	EXPECT_EQ(members(empty_set()), V{});

	// Entries removed from the AV are not taken into a new set.
	fi_addr_t gone = 3;
	ASSERT_EQ(fi_av_remove(av, &gone, 1, 0), 0);
	EXPECT_EQ(members(open_set(0, 5, 1)), (V{0, 1, 2, 4, 5}));
	EXPECT_EQ(members(open_set(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, FI_UNIVERSE)),
		  (V{0, 1, 2, 4, 5}));
}

TEST_F(AvSetFixture, BadAttributesAreRefused)
{
	int ret = 0;
	EXPECT_EQ(open_set(0, 5, 0, 0, 0, &ret), nullptr);  // a range needs a stride
	EXPECT_EQ(ret, -FI_EINVAL);
	EXPECT_EQ(open_set(4, 2, 1, 0, 0, &ret), nullptr);  // start after end
	EXPECT_EQ(ret, -FI_EINVAL);
	EXPECT_EQ(open_set(0, 5, 1, 0, 3, &ret), nullptr);  // more than count
	EXPECT_EQ(ret, -FI_EINVAL);
	EXPECT_EQ(open_set(0, FI_ADDR_NOTAVAIL, 1, 0, 0, &ret), nullptr);  // one end only
	EXPECT_EQ(ret, -FI_EINVAL);
	EXPECT_EQ(open_set(0, 5, 1, FI_UNIVERSE, 0, &ret), nullptr);  // universe and a range
	EXPECT_EQ(ret, -FI_EINVAL);
	EXPECT_EQ(open_set(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, 1ULL << 3, 0, &ret), nullptr);
	EXPECT_EQ(ret, -FI_EINVAL);  // unknown flag

	struct fi_av_set_attr attr{};
	attr.start_addr = attr.end_addr = FI_ADDR_NOTAVAIL;
	uint8_t key[4] = {1, 2, 3, 4};
	attr.comm_key = key;
	attr.comm_key_size = sizeof(key);
	struct fid_av_set *set = nullptr;
	EXPECT_EQ(fi_av_set(av, &attr, &set, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_av_set(av, nullptr, &set, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_av_set(av, &attr, nullptr, nullptr), -FI_EINVAL);
}

TEST_F(AvSetFixture, InsertRemoveKeepOrder)
{
	struct fid_av_set *set = empty_set();
	ASSERT_NE(set, nullptr);
	EXPECT_EQ(fi_av_set_insert(set, 4), 0);
	EXPECT_EQ(fi_av_set_insert(set, 1), 0);
	EXPECT_EQ(fi_av_set_insert(set, 5), 0);
	EXPECT_EQ(fi_av_set_insert(set, 1), -FI_EINVAL);   // already a member
	EXPECT_EQ(fi_av_set_insert(set, 42), -FI_EINVAL);  // not in the AV
	EXPECT_EQ(fi_av_set_insert(set, FI_ADDR_NOTAVAIL), -FI_EINVAL);
	EXPECT_EQ(members(set), (V{4, 1, 5}));
	EXPECT_EQ(fi_av_set_remove(set, 1), 0);
	EXPECT_EQ(fi_av_set_remove(set, 1), -FI_EINVAL);
	EXPECT_EQ(members(set), (V{4, 5}));
}

TEST_F(AvSetFixture, UnionIntersectDiff)
{
	struct fid_av_set *evens = open_set(0, 5, 2);  // 0 2 4
	struct fid_av_set *low = open_set(0, 3, 1);    // 0 1 2 3
	ASSERT_TRUE(evens && low);

	struct fid_av_set *u = open_set(0, 5, 2);
	ASSERT_EQ(fi_av_set_union(u, low), 0);  // new members appended in low's order
	EXPECT_EQ(members(u), (V{0, 2, 4, 1, 3}));

	struct fid_av_set *i = open_set(0, 3, 1);
	ASSERT_EQ(fi_av_set_intersect(i, evens), 0);  // destination order kept
	EXPECT_EQ(members(i), (V{0, 2}));

	struct fid_av_set *d = open_set(0, 3, 1);
	ASSERT_EQ(fi_av_set_diff(d, evens), 0);
	EXPECT_EQ(members(d), (V{1, 3}));

	// With itself: union changes nothing, diff empties.
	ASSERT_EQ(fi_av_set_union(low, low), 0);
	EXPECT_EQ(members(low), (V{0, 1, 2, 3}));
	ASSERT_EQ(fi_av_set_diff(low, low), 0);
	EXPECT_EQ(members(low), V{});

	// Not a set, or a set of another AV: refused.
	EXPECT_EQ(fi_av_set_union(u, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_av_set_union(u, reinterpret_cast<struct fid_av_set *>(av)), -FI_EINVAL);
	struct fi_av_attr attr{};
	attr.type = FI_AV_TABLE;
	struct fid_av *other_av = nullptr;
	ASSERT_EQ(fi_av_open(domain, &attr, &other_av, nullptr), 0);
	struct fi_av_set_attr sattr{};
	sattr.start_addr = sattr.end_addr = FI_ADDR_NOTAVAIL;
	struct fid_av_set *foreign = nullptr;
	ASSERT_EQ(fi_av_set(other_av, &sattr, &foreign, nullptr), 0);
	EXPECT_EQ(fi_av_set_intersect(u, foreign), -FI_EINVAL);
	EXPECT_EQ(members(u), (V{0, 2, 4, 1, 3}));
	EXPECT_EQ(fi_close(&other_av->fid), -FI_EBUSY);  // the set holds its AV
	EXPECT_EQ(fi_close(&foreign->fid), 0);
	EXPECT_EQ(fi_close(&other_av->fid), 0);
}

TEST_F(AvSetFixture, CollectiveAddressNamesTheSet)
{
	struct fid_av_set *a = open_set(0, 5, 1);
	struct fid_av_set *b = open_set(0, 5, 1);
	ASSERT_TRUE(a && b);
	fi_addr_t addr_a = 0, addr_b = 0;
	ASSERT_EQ(fi_av_set_addr(a, &addr_a), 0);
	ASSERT_EQ(fi_av_set_addr(b, &addr_b), 0);
	EXPECT_NE(addr_a, addr_b);
	EXPECT_NE(addr_a, FI_ADDR_NOTAVAIL);
	EXPECT_TRUE(addr_a & util::AvSet::kCollAddrBit);  // never an AV index
	EXPECT_EQ(fi_av_set_addr(a, nullptr), -FI_EINVAL);

	EXPECT_NE(util::AvSet::find_collective(a, addr_a), nullptr);
	EXPECT_EQ(util::AvSet::find_collective(a, addr_b), nullptr);
	EXPECT_EQ(util::AvSet::find_collective(nullptr, addr_a), nullptr);
	EXPECT_EQ(util::AvSet::find_collective(reinterpret_cast<struct fid_av_set *>(av), 0),
		  nullptr);
}

} // namespace
