// ofi_rxm's struct fi_provider: parameters, getinfo and fabric entry points.
#include "prov/rxm/rxm_provider.h"
#include "prov/rxm/rxm_wire.h"

#include "prov/rxm/rxm_fabric.h"
#include "prov/rxm/rxm_info.h"

#include <rdma/fi_errno.h>

namespace rxm {

namespace {

RxmParams g_params;

void define_params()
{
	fi_param_define(&rxm_prov, "buffer_size", FI_PARAM_SIZE_T,
			"Payload size of rxm's bounce buffers: the eager message limit and the "
			"segment size of the SAR protocol (default %zu, %zu over byte-stream cores "
			"such as tcp).", g_params.buffer_size, g_params.stream_buffer_size);
	fi_param_define(&rxm_prov, "sar_limit", FI_PARAM_SIZE_T,
			"Messages up to this size are segmented (SAR); larger ones use the "
			"rendezvous protocol when the core provider supports RMA (default %zu).",
			g_params.sar_limit);
	fi_param_define(&rxm_prov, "stream_rndv", FI_PARAM_BOOL,
			"Over RDMA cores with credit flow control (verbs), a message above the "
			"eager size sent while other sends to the same peer are still in flight "
			"uses the rendezvous protocol instead of SAR; a message sent alone keeps "
			"SAR up to sar_limit (default: yes).");
	fi_param_define(&rxm_prov, "tx_size", FI_PARAM_SIZE_T,
			"Default transmit queue depth of rxm endpoints (default %zu).", g_params.tx_size);
	fi_param_define(&rxm_prov, "rx_size", FI_PARAM_SIZE_T,
			"Default receive queue depth of rxm endpoints (default %zu).", g_params.rx_size);
	fi_param_define(&rxm_prov, "msg_tx_size", FI_PARAM_SIZE_T,
			"Transmit depth requested for core FI_EP_MSG endpoints (default %zu).",
			g_params.msg_tx_size);
	fi_param_define(&rxm_prov, "msg_rx_size", FI_PARAM_SIZE_T,
			"Receive buffers posted to each core FI_EP_MSG connection (default %zu).",
			g_params.msg_rx_size);
	fi_param_define(&rxm_prov, "use_rndv_write", FI_PARAM_BOOL,
			"Rendezvous by RMA write of the sender instead of RMA read of the receiver "
			"(default: no).");
	fi_param_define(&rxm_prov, "use_cma", FI_PARAM_BOOL,
			"When the peer is a process on this host (proved by reading a token from "
			"its memory), pull rendezvous data with process_vm_readv, one copy, "
			"instead of an RMA read through the core; a failed proof falls back to "
			"the core for that connection (default: yes over byte-stream cores such "
			"as tcp and over shm, no over others such as verbs).");
	fi_param_define(&rxm_prov, "cma_rndv_min", FI_PARAM_SIZE_T,
			"On connections whose peer pulls by process_vm_readv (see use_cma), "
			"messages larger than this use rendezvous instead of eager or SAR "
			"(default %zu; over shared memory %zu, or the eager size if smaller).",
			g_params.cma_rndv_min, g_params.cma_rndv_min_shm);
	fi_param_define(&rxm_prov, "use_shm", FI_PARAM_BOOL,
			"Move the traffic of a peer proved to run on this host (same user, same "
			"network namespace, holding the far end of our connection) to shared "
			"memory (the shm provider) once its connection is up; both peers must "
			"have it on, else they stay on the core (default: yes; never over cores with "
			"local registrations or credit flow control such as verbs).");
	fi_param_define(&rxm_prov, "use_srx", FI_PARAM_BOOL,
			"Post receive buffers once per endpoint to a shared receive context of the "
			"core provider instead of msg_rx_size buffers per connection, so memory does "
			"not grow with peers; cores without shared contexts fall back (default: yes).");
	fi_param_define(&rxm_prov, "direct_recv", FI_PARAM_BOOL,
			"With a shared receive context of a core that offers it (tcp), have an "
			"eager message that matches a posted receive placed by the core straight "
			"into that receive instead of into a receive buffer copied out after; over "
			"shm, have such a message copied from shm's ring straight into that "
			"receive (default: yes).");
	fi_param_define(&rxm_prov, "data_auto_progress", FI_PARAM_BOOL,
			"Progress data transfers from a background thread even when the "
			"application asked for manual progress (default: no).");
	fi_param_define(&rxm_prov, "conn_timeout", FI_PARAM_INT,
			"Seconds a connection to a peer may take to come up (request sent or "
			"received until established); then the sends waiting for it fail with "
			"FI_ETIMEDOUT. 0 waits forever (default %d).", g_params.conn_timeout_s);
	fi_param_define(&rxm_prov, "rndv_read_timeout", FI_PARAM_INT,
			"Seconds a rendezvous read may wait for the sending peer to serve it; then "
			"the receive completes with FI_ETIMEDOUT and the connection to that peer is "
			"closed. 0 waits forever (default %d).", g_params.rndv_read_timeout_s);
	fi_param_define(&rxm_prov, "unexpected_budget", FI_PARAM_SIZE_T,
			"Bytes of unexpected messages (not yet matched by a receive) buffered per "
			"peer; a peer over it is no longer read (its data waits in the core, nothing "
			"is dropped) until the application's receives take its messages "
			"(default %zu).", g_params.unexpected_budget);
	fi_param_define(&rxm_prov, "cm_progress_interval", FI_PARAM_SIZE_T,
			"Microseconds between reads of the core event queue (connection "
			"management) while the core completion queue keeps delivering (and on the "
			"call right after one it delivered to); otherwise at most every 50 "
			"microseconds (default %zu).",
			g_params.cm_progress_interval_us);
}

void read_size(const char *name, size_t *value, size_t minimum)
{
	size_t v;
	if (fi_param_get_size_t(&rxm_prov, name, &v) == 0) {
		if (v >= minimum)
			*value = v;
		else
			RXM_WARN(FI_LOG_CORE, "ignoring %s=%zu, below minimum %zu\n", name, v, minimum);
	}
}

void read_params()
{
	// Control messages travel in bounce buffers too: the largest, a rendezvous request of
	// four segments with a same-host offer, must fit (smaller buffers overflowed with it).
	constexpr size_t kMinBufferSize = rndv_payload_size(kRndvMaxSegments) + kCmaOfferSize;
	read_size("buffer_size", &g_params.buffer_size, kMinBufferSize);
	size_t given;
	g_params.buffer_size_set = fi_param_get_size_t(&rxm_prov, "buffer_size", &given) == 0 &&
				   given >= kMinBufferSize;
	read_size("cm_progress_interval", &g_params.cm_progress_interval_us, 0);
	read_size("sar_limit", &g_params.sar_limit, 0);
	read_size("tx_size", &g_params.tx_size, 16);
	read_size("rx_size", &g_params.rx_size, 16);
	read_size("msg_tx_size", &g_params.msg_tx_size, 4);
	read_size("msg_rx_size", &g_params.msg_rx_size, 4);
	int b;
	if (fi_param_get_bool(&rxm_prov, "use_rndv_write", &b) == 0)
		g_params.use_rndv_write = b != 0;
	if (fi_param_get_bool(&rxm_prov, "stream_rndv", &b) == 0)
		g_params.stream_rndv = b != 0;
	if (fi_param_get_bool(&rxm_prov, "use_cma", &b) == 0) {
		g_params.use_cma = b != 0;
		g_params.use_cma_set = true;
	}
	read_size("cma_rndv_min", &g_params.cma_rndv_min, 0);
	g_params.cma_rndv_min_set = fi_param_get_size_t(&rxm_prov, "cma_rndv_min", &given) == 0;
	if (fi_param_get_bool(&rxm_prov, "use_shm", &b) == 0)
		g_params.use_shm = b != 0;
	if (fi_param_get_bool(&rxm_prov, "use_srx", &b) == 0)
		g_params.use_srx = b != 0;
	if (fi_param_get_bool(&rxm_prov, "direct_recv", &b) == 0)
		g_params.direct_recv = b != 0;
	if (fi_param_get_bool(&rxm_prov, "data_auto_progress", &b) == 0)
		g_params.data_auto_progress = b != 0;
	int timeout;
	if (fi_param_get_int(&rxm_prov, "conn_timeout", &timeout) == 0) {
		if (timeout >= 0)
			g_params.conn_timeout_s = timeout;
		else
			RXM_WARN(FI_LOG_CORE, "ignoring conn_timeout=%d, below 0\n", timeout);
	}
	if (fi_param_get_int(&rxm_prov, "rndv_read_timeout", &timeout) == 0) {
		if (timeout >= 0)
			g_params.rndv_read_timeout_s = timeout;
		else
			RXM_WARN(FI_LOG_CORE, "ignoring rndv_read_timeout=%d, below 0\n", timeout);
	}
	read_size("unexpected_budget", &g_params.unexpected_budget, 1);
	// A wire header's payload_len is 32 bits; keep buffers far below that.
	if (g_params.buffer_size > (1u << 30))
		g_params.buffer_size = 1u << 30;
}

void rxm_cleanup() {}

} // namespace

const RxmParams &params() { return g_params; }

struct fi_provider rxm_prov = {
	kProviderVersion,
	FI_VERSION(1, 17),
	{},
	kProviderName,
	rxm_getinfo,
	rxm_fabric_open,
	rxm_cleanup,
};

} // namespace rxm

extern "C" struct fi_provider *ofi_rxm_provider_init(void)
{
	static bool initialized = false;
	if (!initialized) {
		initialized = true;
		rxm::define_params();
		rxm::read_params();
	}
	return &rxm::rxm_prov;
}
