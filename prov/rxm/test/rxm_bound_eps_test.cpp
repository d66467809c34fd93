// BoundEndpoints (prov/rxm/rxm_bound_eps.h): the list a CQ or counter progresses. Closing an
// endpoint removes it and then frees it, while another thread may be reading the CQ with a
// copy of the list: remove must not return while such a copy can still reach the endpoint.
#include "prov/rxm/rxm_bound_eps.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using rxm::BoundEndpoints;
using rxm::RxmEndpoint;

// Stand-ins: the list only stores and hands back the pointers.
struct FakeEndpoint {
	std::atomic<bool> freed{false};
	std::atomic<int> touched_after_free{0};
};

RxmEndpoint *as_ep(FakeEndpoint &fake) { return reinterpret_cast<RxmEndpoint *>(&fake); }
FakeEndpoint &as_fake(RxmEndpoint *ep) { return *reinterpret_cast<FakeEndpoint *>(ep); }

TEST(RxmBoundEndpoints, RemoveWaitsForAReaderThatCopiedTheList)
{
	BoundEndpoints eps;
	FakeEndpoint fake;
	eps.add(as_ep(fake));
	std::atomic<bool> in_reader{false};
	std::thread reader([&] {
		eps.for_each([&](RxmEndpoint *ep) {
			in_reader = true;
			// A slow progress pass on the endpoint, e.g. a core CQ read.
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			if (as_fake(ep).freed)
				as_fake(ep).touched_after_free++;
		});
	});
	while (!in_reader)
		std::this_thread::yield();
	EXPECT_TRUE(eps.remove(as_ep(fake)));
	fake.freed = true;  // what fi_close does next
	reader.join();
	EXPECT_EQ(0, fake.touched_after_free.load());
}

TEST(RxmBoundEndpoints, ABusyReaderCannotStarveTheRemoval)
{
	BoundEndpoints eps;
	FakeEndpoint fake, other;
	eps.add(as_ep(fake));
	eps.add(as_ep(other));
	std::atomic<bool> stop{false};
	std::atomic<long> passes{0};
	auto read_forever = [&] {
		while (!stop) {
			eps.for_each([&](RxmEndpoint *ep) {
				if (as_fake(ep).freed)
					as_fake(ep).touched_after_free++;
			});
			passes++;
		}
	};
	std::thread r1(read_forever), r2(read_forever);
	while (passes < 1000)
		std::this_thread::yield();
	EXPECT_TRUE(eps.remove(as_ep(fake)));
	fake.freed = true;
	long after = passes;
	while (passes < after + 1000)
		std::this_thread::yield();
	stop = true;
	r1.join();
	r2.join();
	EXPECT_EQ(0, fake.touched_after_free.load());
	EXPECT_FALSE(eps.remove(as_ep(fake)));
}

TEST(RxmBoundEndpoints, AnEndpointMayRemoveItselfWhileProgressed)
{
	BoundEndpoints eps;
	FakeEndpoint fake;
	eps.add(as_ep(fake));
	int calls = 0;
	eps.for_each([&](RxmEndpoint *ep) {
		calls++;
		EXPECT_TRUE(eps.remove(ep));  // must not wait for this very pass
	});
	EXPECT_EQ(1, calls);
	eps.for_each([&](RxmEndpoint *) { calls++; });
	EXPECT_EQ(1, calls);
}

} // namespace
