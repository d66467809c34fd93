// fi_log and its filters: FI_LOG_LEVEL (warn, trace, info, debug; unset = silent),
// FI_LOG_PROV and FI_LOG_SUBSYS (comma lists, '^' excludes), FI_LOG_INTERVAL for the
// rate-limited FI_LOG_SPARSE messages. Lines look like libfabric's:
//   libfabric:<pid>:<seconds>::<provider>:<subsystem>:<function>():<line><<level>> <message>
#include "src/log.h"

#include <rdma/fabric.h>

#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace ofi::core {

fi_provider core_log_provider = {
	.version = FI_VERSION(1, 17),
	.fi_version = FI_VERSION(1, 17),
	.context = {},
	.name = "core",
	.getinfo = nullptr,
	.fabric = nullptr,
	.cleanup = nullptr,
};

namespace {

constexpr const char *level_names[FI_LOG_MAX] = {"warn", "trace", "info", "debug"};
constexpr const char *subsys_names[FI_LOG_SUBSYS_MAX] = {
	"core", "fabric", "domain", "ep_ctrl", "ep_data", "av", "cq", "eq", "mr", "cntr"};

// A comma separated name list; a leading '^' makes it an exclude list. Empty allows all.
struct NameFilter {
	bool exclude = false;
	std::vector<std::string> names;

	bool allows(const char *name) const
	{
		if (names.empty())
			return true;
		for (const std::string &n : names)
			if (strcasecmp(n.c_str(), name) == 0)
				return !exclude;
		return exclude;
	}
};

NameFilter parse_filter(const char *spec)
{
	NameFilter filter;
	if (!spec)
		return filter;
	std::string text(spec);
	if (!text.empty() && text[0] == '^') {
		filter.exclude = true;
		text.erase(0, 1);
	}
	size_t start = 0;
	while (start <= text.size()) {
		size_t end = text.find(',', start);
		if (end == std::string::npos)
			end = text.size();
		if (end > start)
			filter.names.push_back(text.substr(start, end - start));
		start = end + 1;
	}
	return filter;
}

struct LogSettings {
	int max_level = -1; // highest enabled level, -1 = logging off
	NameFilter providers;
	uint32_t subsys_mask = 0;
	uint64_t interval_ms = 2000;
};

std::mutex settings_lock;
std::atomic<LogSettings *> settings{nullptr};


LogSettings read_settings()
{
	LogSettings s;
	if (const char *level = std::getenv("FI_LOG_LEVEL")) {
		for (int i = 0; i < FI_LOG_MAX; ++i)
			if (strcasecmp(level, level_names[i]) == 0)
				s.max_level = i;
		if (s.max_level < 0)
			std::fprintf(stderr, "libfabric: ignoring unknown FI_LOG_LEVEL '%s'\n",
				     level);
	}
	s.providers = parse_filter(std::getenv("FI_LOG_PROV"));
	NameFilter subsys = parse_filter(std::getenv("FI_LOG_SUBSYS"));
	for (int i = 0; i < FI_LOG_SUBSYS_MAX; ++i)
		if (subsys.allows(subsys_names[i]))
			s.subsys_mask |= 1u << i;
	if (const char *interval = std::getenv("FI_LOG_INTERVAL")) {
		char *end;
		unsigned long long ms = std::strtoull(interval, &end, 10);
		if (end != interval && !*end)
			s.interval_ms = ms;
	}
	return s;
}

// Readers may still hold an older settings object, so every one made stays alive (kept here
// so that it is never a leak); only tests reload the settings.
LogSettings *make_settings()
{
	static auto *all_settings = new std::vector<LogSettings *>;
	all_settings->push_back(new LogSettings(read_settings()));
	return all_settings->back();
}

const LogSettings &current()
{
	LogSettings *loaded = settings.load(std::memory_order_acquire);
	if (!loaded) {
		std::lock_guard guard(settings_lock);
		loaded = settings.load(std::memory_order_acquire);
		if (!loaded) {
			loaded = make_settings();
			settings.store(loaded, std::memory_order_release);
		}
	}
	return *loaded;
}

uint64_t now_ms()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

bool enabled(const fi_provider *prov, fi_log_level level, fi_log_subsys subsys)
{
	const LogSettings &s = current();
	if (int(level) < 0 || int(level) > s.max_level)
		return false;
	if (unsigned(subsys) >= FI_LOG_SUBSYS_MAX || !(s.subsys_mask & (1u << subsys)))
		return false;
	const char *name = prov && prov->name ? prov->name : core_log_provider.name;
	return s.providers.allows(name);
}

} // namespace

void reload_log_settings()
{
	std::lock_guard guard(settings_lock);
	settings.store(make_settings(), std::memory_order_release);
}

} // namespace ofi::core

using ofi::core::core_log_provider;

extern "C" {

int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys)
{
	return ofi::core::enabled(prov, level, subsys);
}

int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
		 enum fi_log_subsys subsys, uint64_t *showtime)
{
	if (!ofi::core::enabled(prov, level, subsys))
		return 0;
	if (!showtime)
		return 1;
	uint64_t now = ofi::core::now_ms();
	if (now < *showtime)
		return 0;
	*showtime = now + ofi::core::current().interval_ms;
	return 1;
}

void fi_log(const struct fi_provider *prov, enum fi_log_level level, enum fi_log_subsys subsys,
	    const char *func, int line, const char *fmt, ...)
{
	const char *level_name =
		unsigned(level) < FI_LOG_MAX ? ofi::core::level_names[level] : "unknown";
	const char *subsys_name =
		unsigned(subsys) < FI_LOG_SUBSYS_MAX ? ofi::core::subsys_names[subsys] : "unknown";
	const char *prov_name = prov && prov->name ? prov->name : core_log_provider.name;

	// One buffer and one write per message keeps lines from different threads whole.
	char buf[1024];
	int len = std::snprintf(buf, sizeof(buf), "libfabric:%d:%ld::%s:%s:%s():%d<%s> ",
				int(getpid()), long(std::time(nullptr)), prov_name, subsys_name,
				func ? func : "", line, level_name);
	if (len < 0)
		return;
	if (size_t(len) < sizeof(buf) && fmt) {
		va_list args;
		va_start(args, fmt);
		std::vsnprintf(buf + len, sizeof(buf) - len, fmt, args);
		va_end(args);
	}
	std::fputs(buf, stderr);
}

} // extern "C"
