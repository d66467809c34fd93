// fi_log filtering (FI_LOG_LEVEL, FI_LOG_PROV, FI_LOG_SUBSYS), format and rate limiting.
#include "src/log.h"
#include "src/test/fake_providers.h"

#include <rdma/providers/fi_log.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <regex>
#include <string>

namespace {

fi_provider tcp_like = {1, FI_VERSION(1, 17), {}, "tcpish", nullptr, nullptr, nullptr};
fi_provider other = {1, FI_VERSION(1, 17), {}, "otherprov", nullptr, nullptr, nullptr};

// Sets the FI_LOG_* variables for one test and restores them afterwards.
struct LogEnv {
	ScopedEnv level, prov, subsys, interval;
	LogEnv(const char *lvl, const char *prv = nullptr, const char *sub = nullptr,
	       const char *ival = nullptr)
		: level("FI_LOG_LEVEL", lvl), prov("FI_LOG_PROV", prv),
		  subsys("FI_LOG_SUBSYS", sub), interval("FI_LOG_INTERVAL", ival)
	{
		ofi::core::reload_log_settings();
	}
	~LogEnv() { ofi::core::reload_log_settings(); }
};

TEST(Log, SilentByDefault)
{
	LogEnv env(nullptr);
	EXPECT_FALSE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_CORE));
}

TEST(Log, LevelFilters)
{
	LogEnv env("info");
	EXPECT_TRUE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_CORE));
	EXPECT_TRUE(fi_log_enabled(&tcp_like, FI_LOG_TRACE, FI_LOG_EP_DATA));
	EXPECT_TRUE(fi_log_enabled(&tcp_like, FI_LOG_INFO, FI_LOG_CQ));
	EXPECT_FALSE(fi_log_enabled(&tcp_like, FI_LOG_DEBUG, FI_LOG_CQ));
	EXPECT_FALSE(fi_log_enabled(&tcp_like, FI_LOG_MAX, FI_LOG_CQ));
	EXPECT_FALSE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_SUBSYS_MAX));
}

TEST(Log, ProviderFilter)
{
	{
		LogEnv env("warn", "tcpish");
		EXPECT_TRUE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_CORE));
		EXPECT_FALSE(fi_log_enabled(&other, FI_LOG_WARN, FI_LOG_CORE));
	}
	{
		LogEnv env("warn", "^tcpish");
		EXPECT_FALSE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_CORE));
		EXPECT_TRUE(fi_log_enabled(&other, FI_LOG_WARN, FI_LOG_CORE));
	}
}

TEST(Log, SubsystemFilter)
{
	LogEnv env("warn", nullptr, "ep_data,cq");
	EXPECT_TRUE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_EP_DATA));
	EXPECT_TRUE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_CQ));
	EXPECT_FALSE(fi_log_enabled(&tcp_like, FI_LOG_WARN, FI_LOG_AV));
}

TEST(Log, MessageFormatAndMacros)
{
	LogEnv env("warn");
	testing::internal::CaptureStderr();
	errno = 1234;
	FI_WARN(&tcp_like, FI_LOG_EP_CTRL, "connect failed: %d\n", 7);
	EXPECT_EQ(errno, 1234); // logging keeps errno
	FI_INFO(&tcp_like, FI_LOG_EP_CTRL, "not shown\n");
	std::string out = testing::internal::GetCapturedStderr();
	std::regex line(R"(libfabric:\d+:\d+::tcpish:ep_ctrl:\w+\(\):\d+<warn> connect failed: 7\n)");
	EXPECT_TRUE(std::regex_match(out, line)) << out;
}

TEST(Log, SparseMessagesAreRateLimited)
{
	LogEnv env("warn", nullptr, nullptr, "100000");
	uint64_t showtime = 0;
	EXPECT_TRUE(fi_log_ready(&tcp_like, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	EXPECT_FALSE(fi_log_ready(&tcp_like, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	showtime = 0;
	EXPECT_TRUE(fi_log_ready(&tcp_like, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	EXPECT_FALSE(fi_log_ready(&tcp_like, FI_LOG_INFO, FI_LOG_CORE, &showtime));
}

} // namespace
