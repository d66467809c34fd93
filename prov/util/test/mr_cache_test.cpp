// util::MrCache over util::MemoryMonitor with a fake registrar: hits, invalidation by
// munmap / madvise / mremap / brk-like shrink, limits, and a thread unmapping while another
// looks up. Needs userfaultfd (skipped without it).
#include "prov/util/mr_cache.h"

#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <sys/mman.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

struct FakeReg {
	void *addr;
	size_t len;
	uint64_t stamp; // the registrar's stamp when it was made
	int id;         // handles are compared by id: a freed one's address comes back
};

class FakeRegistrar : public util::MrRegistrar {
public:
	void *reg(void *addr, size_t len, uint64_t, int *) noexcept override
	{
		std::lock_guard guard(mutex);
		regs++;
		auto *r = new FakeReg{addr, len, stamp.load(), regs};
		live.insert(r->id);
		return r;
	}
	void dereg(void *handle) noexcept override
	{
		std::lock_guard guard(mutex);
		deregs++;
		auto *r = static_cast<FakeReg *>(handle);
		EXPECT_EQ(live.erase(r->id), 1u) << "deregistered twice";
		delete r;
	}
	static int id_of(void *handle) { return static_cast<FakeReg *>(handle)->id; }
	bool is_live(int id)
	{
		std::lock_guard guard(mutex);
		return live.count(id) != 0;
	}
	std::mutex mutex;
	int regs = 0;
	int deregs = 0;
	std::set<int> live;
	std::atomic<uint64_t> stamp{0};
};

class MrCacheTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		if (!util::MemoryMonitor::available())
			GTEST_SKIP() << "no userfaultfd here";
		page = size_t(sysconf(_SC_PAGESIZE));
	}
	void *map(size_t len)
	{
		void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		EXPECT_NE(p, MAP_FAILED);
		memset(p, 1, len);
		return p;
	}
	// Maps fresh pages at p (as an application reusing an address would).
	void remap_at(void *p, size_t len)
	{
		void *q = mmap(p, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		ASSERT_EQ(q, p);
	}
	util::MrCacheLimits limits(size_t count = 16)
	{
		util::MrCacheLimits l;
		l.max_count = count;
		l.max_size = size_t(64) << 20;
		return l;
	}
	size_t page = 4096;
	FakeRegistrar fake;
};

TEST_F(MrCacheTest, SecondAcquireOfSameBufferHits)
{
	char *buf = static_cast<char *>(map(16 * page));
	util::MrCache cache(fake, limits());
	ASSERT_TRUE(cache.caching());
	int err = 0;
	util::MrCacheEntry *a = cache.acquire(buf + 100, 8 * page, FI_READ, &err);
	ASSERT_NE(a, nullptr);
	cache.release(a);
	util::MrCacheEntry *b = cache.acquire(buf + 200, 4 * page, FI_READ, &err);
	EXPECT_EQ(a, b);
	cache.release(b);
	EXPECT_EQ(fake.regs, 1);
	EXPECT_EQ(fake.deregs, 0);
	EXPECT_EQ(cache.stats().hits, 1u);
	// More access than the entry has: a new registration.
	util::MrCacheEntry *c = cache.acquire(buf + 200, 4 * page, FI_READ | FI_SEND, &err);
	EXPECT_NE(c, a);
	cache.release(c);
	EXPECT_EQ(fake.regs, 2);
	munmap(buf, 16 * page);
}

TEST_F(MrCacheTest, MunmapMakesTheNextLookupMissAndDropsTheOldEntry)
{
	char *buf = static_cast<char *>(map(8 * page));
	util::MrCache cache(fake, limits());
	int err = 0;
	util::MrCacheEntry *a = cache.acquire(buf, 8 * page, FI_READ, &err);
	int old = FakeRegistrar::id_of(a->handle);
	cache.release(a);
	ASSERT_EQ(munmap(buf, 8 * page), 0);
	remap_at(buf, 8 * page);
	util::MrCacheEntry *b = cache.acquire(buf, 8 * page, FI_READ, &err);
	ASSERT_NE(b, nullptr);
	EXPECT_NE(FakeRegistrar::id_of(b->handle), old);
	EXPECT_FALSE(fake.is_live(old));
	EXPECT_EQ(fake.regs, 2);
	EXPECT_EQ(cache.stats().invalidated, 1u);
	cache.release(b);
	munmap(buf, 8 * page);
}

TEST_F(MrCacheTest, PartialMunmapOfTheRangeInvalidates)
{
	char *buf = static_cast<char *>(map(8 * page));
	util::MrCache cache(fake, limits());
	int err = 0;
	cache.release(cache.acquire(buf, 8 * page, FI_READ, &err));
	// The heap's top shrinking by brk unmaps the end of a range the same way.
	ASSERT_EQ(munmap(buf + 6 * page, 2 * page), 0);
	cache.release(cache.acquire(buf, 4 * page, FI_READ, &err));
	EXPECT_EQ(fake.regs, 2);
	munmap(buf, 6 * page);
}

TEST_F(MrCacheTest, MadviseDontneedInvalidates)
{
	char *buf = static_cast<char *>(map(8 * page));
	util::MrCache cache(fake, limits());
	int err = 0;
	cache.release(cache.acquire(buf, 8 * page, FI_READ, &err));
	ASSERT_EQ(madvise(buf + 2 * page, page, MADV_DONTNEED), 0);
	cache.release(cache.acquire(buf, 8 * page, FI_READ, &err));
	EXPECT_EQ(fake.regs, 2);
	EXPECT_EQ(fake.deregs, 1);
	munmap(buf, 8 * page);
}

TEST_F(MrCacheTest, MremapMoveInvalidates)
{
	char *buf = static_cast<char *>(map(4 * page));
	char *spot = static_cast<char *>(map(4 * page)); // a free place to move to
	util::MrCache cache(fake, limits());
	int err = 0;
	cache.release(cache.acquire(buf, 4 * page, FI_READ, &err));
	void *moved = mremap(buf, 4 * page, 4 * page, MREMAP_MAYMOVE | MREMAP_FIXED, spot);
	ASSERT_EQ(moved, spot);
	remap_at(buf, 4 * page);
	cache.release(cache.acquire(buf, 4 * page, FI_READ, &err));
	EXPECT_EQ(fake.regs, 2);
	munmap(buf, 4 * page);
	munmap(spot, 4 * page);
}

TEST_F(MrCacheTest, EntryInUseWhenUnmappedIsDeregisteredAtRelease)
{
	char *buf = static_cast<char *>(map(4 * page));
	util::MrCache cache(fake, limits());
	int err = 0;
	util::MrCacheEntry *a = cache.acquire(buf, 4 * page, FI_READ, &err);
	int handle = FakeRegistrar::id_of(a->handle);
	ASSERT_EQ(munmap(buf, 4 * page), 0);
	remap_at(buf, 4 * page);
	util::MrCacheEntry *b = cache.acquire(buf, 4 * page, FI_READ, &err);
	EXPECT_NE(a, b);
	EXPECT_TRUE(fake.is_live(handle)); // its user still has it
	cache.release(a);
	EXPECT_FALSE(fake.is_live(handle));
	cache.release(b);
	munmap(buf, 4 * page);
}

TEST_F(MrCacheTest, KernelCopyIntoWatchedRangeAfterDontneedWorks)
{
	char *buf = static_cast<char *>(map(4 * page));
	util::MrCache cache(fake, limits());
	int err = 0;
	cache.release(cache.acquire(buf, 4 * page, FI_READ, &err));
	ASSERT_EQ(madvise(buf, 4 * page, MADV_DONTNEED), 0);
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	const char msg[] = "into missing pages";
	ASSERT_EQ(write(sv[0], msg, sizeof(msg)), ssize_t(sizeof(msg)));
	// The page is missing; the kernel faults it in while copying (a missing-page
	// registration would trap that fault).
	ASSERT_EQ(recv(sv[1], buf + page, sizeof(msg), 0), ssize_t(sizeof(msg)));
	EXPECT_STREQ(buf + page, msg);
	ASSERT_EQ(write(sv[0], msg, sizeof(msg)), ssize_t(sizeof(msg)));
	ASSERT_EQ(read(sv[1], buf + 3 * page, sizeof(msg)), ssize_t(sizeof(msg)));
	EXPECT_STREQ(buf + 3 * page, msg);
	close(sv[0]);
	close(sv[1]);
	munmap(buf, 4 * page);
}

TEST_F(MrCacheTest, LimitsEvictLeastRecentlyUsed)
{
	char *buf = static_cast<char *>(map(12 * page));
	util::MrCache cache(fake, limits(2));
	int err = 0;
	util::MrCacheEntry *a = cache.acquire(buf, page, FI_READ, &err);
	int ha = FakeRegistrar::id_of(a->handle);
	cache.release(a);
	util::MrCacheEntry *b = cache.acquire(buf + 4 * page, page, FI_READ, &err);
	cache.release(b);
	cache.release(cache.acquire(buf, page, FI_READ, &err)); // a is now the most recent
	util::MrCacheEntry *c = cache.acquire(buf + 8 * page, page, FI_READ, &err);
	cache.release(c);
	EXPECT_EQ(cache.stats().count, 2u);
	EXPECT_TRUE(fake.is_live(ha));
	EXPECT_EQ(cache.stats().evicted, 1u); // b
	EXPECT_EQ(fake.regs, 3);
	cache.release(cache.acquire(buf, page, FI_READ, &err));
	EXPECT_EQ(fake.regs, 3);
	// Over the size limit: not cached at all.
	util::MrCacheLimits small = limits();
	small.max_size = 2 * page;
	util::MrCache tiny(fake, small);
	tiny.release(tiny.acquire(buf, 8 * page, FI_READ, &err));
	tiny.release(tiny.acquire(buf, 8 * page, FI_READ, &err));
	EXPECT_EQ(tiny.stats().hits, 0u);
	EXPECT_EQ(tiny.stats().count, 0u);
	munmap(buf, 12 * page);
}

TEST_F(MrCacheTest, WithoutMonitorNothingIsCached)
{
	char *buf = static_cast<char *>(map(4 * page));
	util::MrCacheLimits l = limits();
	l.use_monitor = false;
	util::MrCache cache(fake, l);
	EXPECT_FALSE(cache.caching());
	int err = 0;
	cache.release(cache.acquire(buf, 4 * page, FI_READ, &err));
	cache.release(cache.acquire(buf, 4 * page, FI_READ, &err));
	EXPECT_EQ(fake.regs, 2);
	EXPECT_EQ(fake.deregs, 2);
	munmap(buf, 4 * page);
}

TEST_F(MrCacheTest, DestroyDeregistersEverything)
{
	char *buf = static_cast<char *>(map(4 * page));
	{
		util::MrCache cache(fake, limits());
		int err = 0;
		cache.release(cache.acquire(buf, 4 * page, FI_READ, &err));
		cache.release(cache.acquire(buf, page, FI_WRITE, &err));
	}
	EXPECT_EQ(fake.regs, 2);
	EXPECT_EQ(fake.deregs, 2);
	// The monitor stopped with its last user: unmapping no longer waits for a reader.
	munmap(buf, 4 * page);
}

// A thread zaps the buffer's pages over and over while another looks the buffer up: no
// lookup that starts after a zap returned may hit a registration made before that zap.
TEST_F(MrCacheTest, ThreadUnmappingWhileAnotherLooksUp)
{
	const size_t len = 4 * page;
	char *buf = static_cast<char *>(map(len));
	util::MrCache cache(fake, limits());
	std::atomic<uint64_t> done{0};
	std::atomic<bool> stop{false};
	std::thread zapper([&] {
		for (uint64_t g = 1; g <= 2000 && !stop.load(); g++) {
			fake.stamp.store(g); // registrations from here on may be on the new pages
			madvise(buf, len, MADV_DONTNEED);
			done.store(g);
		}
	});
	int stale = 0;
	uint64_t hits = 0;
	while (done.load() < 2000 && stale == 0) {
		uint64_t d = done.load();
		int err = 0;
		util::MrCacheEntry *e = cache.acquire(buf, len, FI_READ, &err);
		ASSERT_NE(e, nullptr);
		if (static_cast<FakeReg *>(e->handle)->stamp < d)
			stale++;
		cache.release(e);
	}
	hits = cache.stats().hits;
	stop.store(true);
	zapper.join();
	EXPECT_EQ(stale, 0);
	RecordProperty("hits", static_cast<int>(hits));
	munmap(buf, len);
}

} // namespace
