// WaitSpin: the polling budget of blocking reads (prov/util/wait_spin.h).
#include "prov/util/wait_spin.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

namespace {

using util::WaitSpin;
using namespace std::chrono;

// The budget a fresh read would poll for.
microseconds budget(const WaitSpin &spin)
{
	WaitSpin::Clock::time_point start{};
	return duration_cast<microseconds>(spin.until(start) - start);
}

struct SpinEnv : ::testing::Test {
	void TearDown() override { unsetenv("FI_WAIT_SPIN_USEC"); }
};

TEST_F(SpinEnv, DefaultPollsFiftyMicroseconds)
{
	unsetenv("FI_WAIT_SPIN_USEC");
	WaitSpin spin;
	EXPECT_TRUE(spin.enabled());
	EXPECT_EQ(microseconds(50), budget(spin));
}

TEST_F(SpinEnv, ZeroTurnsPollingOff)
{
	setenv("FI_WAIT_SPIN_USEC", "0", 1);
	EXPECT_FALSE(WaitSpin().enabled());
	setenv("FI_WAIT_SPIN_USEC", "20", 1);
	WaitSpin twenty;
	EXPECT_TRUE(twenty.enabled());
	EXPECT_EQ(microseconds(20), budget(twenty));
	setenv("FI_WAIT_SPIN_USEC", "lots", 1);
	EXPECT_EQ(microseconds(50), budget(WaitSpin())) << "not a number: the default";
}

TEST(WaitSpin, SleepsLongerThanTheMaximumHalveTheBudget)
{
	unsetenv("FI_WAIT_SPIN_USEC");
	WaitSpin spin;
	spin.slept(milliseconds(5)); // sparse traffic: polling caught nothing
	EXPECT_EQ(microseconds(25), budget(spin));
	for (int i = 0; i < 20; i++)
		spin.slept(milliseconds(5));
	EXPECT_EQ(microseconds(0), budget(spin)) << "an idle reader sleeps at once";
}

TEST(WaitSpin, AShortSleepOrACatchBringsPollingBack)
{
	unsetenv("FI_WAIT_SPIN_USEC");
	WaitSpin spin;
	for (int i = 0; i < 20; i++)
		spin.slept(milliseconds(5));
	spin.slept(microseconds(30)); // woke sooner than the maximum would have polled
	EXPECT_EQ(microseconds(50), budget(spin));
	for (int i = 0; i < 20; i++)
		spin.slept(milliseconds(5));
	spin.caught(); // found something while polling (a budget of 0 polls once)
	EXPECT_GT(budget(spin), microseconds(0));
	for (int i = 0; i < 10; i++)
		spin.caught();
	EXPECT_EQ(microseconds(50), budget(spin));
}

} // namespace
