#include "prov/tcp/tcp_provider.h"

#include "prov/tcp/tcp_fabric.h"
#include "prov/tcp/tcp_info.h"
#include "src/registry.h"

#include <new>

namespace tcp {
namespace {

Settings g_settings;

int tcp_getinfo_entry(uint32_t version, const char *node, const char *service, uint64_t flags,
		      const struct fi_info *hints, struct fi_info **info) noexcept
{
	try {
		return get_infos(version, node, service, flags, hints, info);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

void tcp_cleanup() noexcept {}

size_t read_size(const char *name, size_t fallback)
{
	size_t value = 0;
	if (fi_param_get_size_t(&provider, name, &value) == FI_SUCCESS && value > 0)
		return value;
	return fallback;
}

} // namespace

struct fi_provider provider = {
	.version = kProviderVersion,
	.fi_version = FI_VERSION(1, 17),
	.context = {},
	.name = "tcp",
	.getinfo = tcp_getinfo_entry,
	.fabric = open_fabric,
	.cleanup = tcp_cleanup,
};

const Settings &settings()
{
	return g_settings;
}

uint64_t rx_stall_timeout_ms()
{
	int ms = 0;
	if (fi_param_get_int(&provider, "rx_stall_timeout", &ms) == FI_SUCCESS && ms >= 0)
		return static_cast<uint64_t>(ms);
	return kDefaultRxStallTimeoutMs;
}

void load_settings()
{
	static bool defined = false;
	if (!defined) {
		defined = true;
		fi_param_define(&provider, "iface", FI_PARAM_STRING, "Specify interface name");
		fi_param_define(&provider, "port_low_range", FI_PARAM_INT,
				"define port low range");
		fi_param_define(&provider, "port_high_range", FI_PARAM_INT,
				"define port high range");
		fi_param_define(&provider, "tx_size", FI_PARAM_SIZE_T,
				"define default tx context size (default: 256)");
		fi_param_define(&provider, "rx_size", FI_PARAM_SIZE_T,
				"define default rx context size (default: 256)");
		fi_param_define(&provider, "max_inject", FI_PARAM_SIZE_T,
				"maximum size of an inject operation (default: 128)");
		fi_param_define(&provider, "nodelay", FI_PARAM_BOOL,
				"overrides default TCP_NODELAY socket setting (default: on)");
		fi_param_define(&provider, "coalesce_sends", FI_PARAM_BOOL,
				"with manual progress, a send posted after another in the same "
				"progress pass waits for the next pass (CQ read, blocking read, "
				"fi_trywait), which sends them together in one system call "
				"(default: on)");
		fi_param_define(&provider, "cm_request_timeout", FI_PARAM_INT,
				"milliseconds an accepted socket may take to deliver its complete "
				"connection request before it is closed (default: 5000)");
		fi_param_define(&provider, "rx_stall_timeout", FI_PARAM_INT,
				"milliseconds a connection may sit with a message (or another "
				"frame) partly received and no byte arriving before it is failed: "
				"the receive being filled completes with FI_ETIMEDOUT and the "
				"endpoint gets FI_SHUTDOWN; 0 never (default: 30000)");
		fi_param_define(&provider, "max_pending_conn", FI_PARAM_SIZE_T,
				"accepted sockets per listener still waiting for their connection "
				"request; over it the oldest of the busiest source is closed "
				"(default: 512)");
		fi_param_define(&provider, "max_pending_conn_per_ip", FI_PARAM_SIZE_T,
				"the same bound per source IP address; over it the oldest from "
				"that address is closed (default: 64)");
	}
	Settings s;
	char *iface = nullptr;
	if (fi_param_get_str(&provider, "iface", &iface) == FI_SUCCESS && iface)
		s.iface = iface;
	int port = 0;
	if (fi_param_get_int(&provider, "port_low_range", &port) == FI_SUCCESS)
		s.port_low = port;
	if (fi_param_get_int(&provider, "port_high_range", &port) == FI_SUCCESS)
		s.port_high = port;
	if (s.port_low < 0 || s.port_high > 65535 || s.port_low > s.port_high) {
		FI_WARN(&provider, FI_LOG_CORE, "ignoring invalid FI_TCP_PORT_*_RANGE %d-%d\n",
			s.port_low, s.port_high);
		s.port_low = s.port_high = 0;
	}
	s.tx_size = read_size("tx_size", s.tx_size);
	s.rx_size = read_size("rx_size", s.rx_size);
	s.max_inject = read_size("max_inject", s.max_inject);
	int nodelay = 1;
	if (fi_param_get_bool(&provider, "nodelay", &nodelay) == FI_SUCCESS)
		s.nodelay = nodelay != 0;
	int coalesce = 1;
	if (fi_param_get_bool(&provider, "coalesce_sends", &coalesce) == FI_SUCCESS)
		s.coalesce_sends = coalesce != 0;
	int timeout_ms = 0;
	if (fi_param_get_int(&provider, "cm_request_timeout", &timeout_ms) == FI_SUCCESS &&
	    timeout_ms > 0)
		s.cm_request_timeout_ms = timeout_ms;
	s.max_pending_conn = read_size("max_pending_conn", s.max_pending_conn);
	s.max_pending_conn_per_ip = read_size("max_pending_conn_per_ip",
					      s.max_pending_conn_per_ip);
	g_settings = s;
}

} // namespace tcp

extern "C" struct fi_provider *ofi_tcp_provider_init(void)
{
	try {
		tcp::load_settings();
	} catch (...) {
		return nullptr;
	}
	return &tcp::provider;
}
