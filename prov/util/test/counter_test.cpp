// Counters: values, errors, waits with timeout, wakeups from another thread.
#include "prov/util/test/fake_provider.h"

#include <chrono>
#include <thread>

namespace {

using fake::Fixture;

class CounterFixture : public Fixture {
protected:
	void SetUp() override
	{
		Fixture::SetUp();
		struct fi_cntr_attr attr{};
		attr.events = FI_CNTR_EVENTS_COMP;
		attr.wait_obj = FI_WAIT_UNSPEC;
		ASSERT_EQ(fi_cntr_open(domain, &attr, &cntr, nullptr), 0);
		object = util::fid_cast<util::Counter>(&cntr->fid, FI_CLASS_CNTR);
	}
	void TearDown() override
	{
		EXPECT_EQ(fi_close(&cntr->fid), 0);
		Fixture::TearDown();
	}
	struct fid_cntr *cntr = nullptr;
	util::Counter *object = nullptr;
};

TEST_F(CounterFixture, ValuesAndErrors)
{
	EXPECT_EQ(fi_cntr_read(cntr), 0u);
	EXPECT_EQ(fi_cntr_add(cntr, 5), 0);
	object->increment();
	EXPECT_EQ(fi_cntr_read(cntr), 6u);
	EXPECT_EQ(fi_cntr_set(cntr, 2), 0);
	EXPECT_EQ(fi_cntr_read(cntr), 2u);
	EXPECT_EQ(fi_cntr_adderr(cntr, 3), 0);
	object->increment_error();
	EXPECT_EQ(fi_cntr_readerr(cntr), 4u);
	EXPECT_EQ(fi_cntr_seterr(cntr, 0), 0);
	EXPECT_EQ(fi_cntr_readerr(cntr), 0u);
}

TEST_F(CounterFixture, WaitTimesOutThenSucceeds)
{
	auto start = std::chrono::steady_clock::now();
	EXPECT_EQ(fi_cntr_wait(cntr, 1, 30), -FI_ETIMEDOUT);
	EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(25));
	std::thread bumper([&] {
		for (int i = 0; i < 3; ++i) {
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
			object->increment();
		}
	});
	EXPECT_EQ(fi_cntr_wait(cntr, 3, 5000), 0);
	bumper.join();
	EXPECT_EQ(fi_cntr_wait(cntr, 3, 0), 0);  // already there
}

TEST_F(CounterFixture, WaitReportsErrors)
{
	std::thread failer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		object->increment_error();
	});
	EXPECT_EQ(fi_cntr_wait(cntr, 1, 5000), -FI_EAVAIL);
	failer.join();
}

TEST_F(CounterFixture, EndpointCompletionsBumpBoundCounters)
{
	struct fid_ep *ep = open_ep();
	ASSERT_EQ(fi_ep_bind(ep, &cntr->fid, FI_SEND), 0);
	EXPECT_EQ(fi_ep_bind(ep, &cntr->fid, 1ULL << 50), -FI_EBADFLAGS);
	char byte = 0;
	EXPECT_EQ(fi_send(ep, &byte, 1, nullptr, 0, nullptr), 0);
	EXPECT_EQ(fi_cntr_read(cntr), 1u);
	EXPECT_EQ(fi_close(&cntr->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&ep->fid), 0);
}

} // namespace
