// libFuzzer target: fi_getinfo with hints built from the fuzz bytes. Everything an application
// can put in a hints struct is fuzzed (caps, modes, address formats and addresses, endpoint
// types, protocol, names, every attribute, enum fields including out-of-range values, the API
// version and the flags), except the fid pointers (handle, domain, fabric, nic), which must be
// valid objects by contract. The library is built whole with the fuzzer's instrumentation, so
// this reaches the core matcher, the provider registry and the tcp and ofi_rxm getinfo paths.
//
// Properties checked besides "no crash, no leak, no sanitizer report":
//  - a result list is returned only on success, and each entry survives fi_dupinfo/fi_tostr;
//  - every returned entry names its provider and (unless FI_PROV_ATTR_ONLY asked for the
//    fabric attributes only) is complete, has the endpoint type the hints asked for and at
//    least the capabilities asked for (fi_getinfo(3): providers may add caps, not drop them).
// Node and service come from a small table: fuzzed host names would turn into DNS queries.
#include "config.h"
#include "src/registry.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/socket.h>

// The registry names providers weakly; referencing them links them into the fuzzer.
static fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
static fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;

namespace {

// Consumes the fuzz input front to back; past the end every read yields zeros.
class Bytes {
public:
	Bytes(const uint8_t *data, size_t size) : p_(data), end_(data + size) {}

	uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
	uint64_t u64()
	{
		uint64_t v = 0;
		for (int i = 0; i < 8; i++)
			v = v << 8 | u8();
		return v;
	}
	uint32_t u32() { return static_cast<uint32_t>(u64() >> 32); }
	size_t small(size_t limit) { return u8() % (limit + 1); }

	// A numeric field: usually one of a few interesting values, sometimes anything.
	size_t size_field()
	{
		switch (u8() % 6) {
		case 0: return 0;
		case 1: return 1;
		case 2: return SIZE_MAX;
		case 3: return u8();
		case 4: return static_cast<size_t>(1) << small(63);
		default: return static_cast<size_t>(u64());
		}
	}
	// An enum field: usually in range [0, count), sometimes an arbitrary value.
	int enum_field(int count) { return u8() < 230 ? static_cast<int>(u8() % count) : static_cast<int>(u32()); }
	// Capability-like bit sets: usually a few known bits, sometimes all 64 bits fuzzed.
	uint64_t bits()
	{
		if (u8() < 200) {
			uint64_t v = 0;
			for (size_t n = small(4); n; n--)
				v |= 1ULL << small(63);
			return v;
		}
		return u64();
	}
	// A malloc'ed NUL-terminated string (fi_freeinfo frees it) or NULL.
	char *string()
	{
		size_t len = small(40);
		if (len == 0)
			return nullptr;
		static const char *known[] = {"tcp", "ofi_rxm", "tcp;ofi_rxm", "ofi_rxm;tcp", "verbs",
					      "verbs;ofi_rxm", "^tcp", "lo", "127.0.0.0/8", "TCP-IP",
					      "", ";", "tcp;", ";ofi_rxm", "udp"};
		if (len < 16)
			return strdup(known[len - 1]);
		char *s = static_cast<char *>(malloc(len - 15));
		for (size_t i = 0; i + 16 < len; i++)
			s[i] = static_cast<char>(u8());
		s[len - 16] = 0;
		return s;
	}
	// A malloc'ed blob with its length (for addresses and auth keys).
	void *blob(size_t *len)
	{
		*len = small(140);
		if (*len == 0)
			return nullptr;
		auto *b = static_cast<uint8_t *>(malloc(*len));
		for (size_t i = 0; i < *len; i++)
			b[i] = u8();
		// Often make it look like a real sockaddr so the address paths are reached.
		if (*len >= 2 && u8() & 1) {
			uint16_t family = u8() & 1 ? AF_INET6 : AF_INET;
			memcpy(b, &family, sizeof(family));
		}
		return b;
	}

private:
	const uint8_t *p_;
	const uint8_t *end_;
};

void fill_tx(Bytes &in, fi_tx_attr *tx)
{
	tx->caps = in.bits();
	tx->mode = in.bits();
	tx->op_flags = in.bits();
	tx->msg_order = in.bits();
	tx->comp_order = in.bits();
	tx->inject_size = in.size_field();
	tx->size = in.size_field();
	tx->iov_limit = in.size_field();
	tx->rma_iov_limit = in.size_field();
	tx->tclass = in.u32();
}

void fill_rx(Bytes &in, fi_rx_attr *rx)
{
	rx->caps = in.bits();
	rx->mode = in.bits();
	rx->op_flags = in.bits();
	rx->msg_order = in.bits();
	rx->comp_order = in.bits();
	rx->total_buffered_recv = in.size_field();
	rx->size = in.size_field();
	rx->iov_limit = in.size_field();
}

void fill_ep(Bytes &in, fi_ep_attr *ep)
{
	ep->type = static_cast<fi_ep_type>(in.enum_field(4));
	ep->protocol = in.u8() < 200 ? in.small(40) : in.u32();
	ep->protocol_version = in.u32();
	ep->max_msg_size = in.size_field();
	ep->msg_prefix_size = in.size_field();
	ep->max_order_raw_size = in.size_field();
	ep->max_order_war_size = in.size_field();
	ep->max_order_waw_size = in.size_field();
	ep->mem_tag_format = in.bits();
	ep->tx_ctx_cnt = in.size_field();
	ep->rx_ctx_cnt = in.size_field();
	ep->auth_key = static_cast<uint8_t *>(in.blob(&ep->auth_key_size));
}

void fill_domain(Bytes &in, fi_domain_attr *d)
{
	d->name = in.string();
	d->threading = static_cast<fi_threading>(in.enum_field(6));
	d->control_progress = static_cast<fi_progress>(in.enum_field(3));
	d->data_progress = static_cast<fi_progress>(in.enum_field(3));
	d->resource_mgmt = static_cast<fi_resource_mgmt>(in.enum_field(3));
	d->av_type = static_cast<fi_av_type>(in.enum_field(3));
	d->mr_mode = static_cast<int>(in.u8() < 200 ? in.bits() & 0xffff : in.u32());
	d->mr_key_size = in.size_field();
	d->cq_data_size = in.size_field();
	d->cq_cnt = in.size_field();
	d->ep_cnt = in.size_field();
	d->tx_ctx_cnt = in.size_field();
	d->rx_ctx_cnt = in.size_field();
	d->max_ep_tx_ctx = in.size_field();
	d->max_ep_rx_ctx = in.size_field();
	d->max_ep_stx_ctx = in.size_field();
	d->max_ep_srx_ctx = in.size_field();
	d->cntr_cnt = in.size_field();
	d->mr_iov_limit = in.size_field();
	d->caps = in.bits();
	d->mode = in.bits();
	d->auth_key = static_cast<uint8_t *>(in.blob(&d->auth_key_size));
	d->max_err_data = in.size_field();
	d->mr_cnt = in.size_field();
	d->tclass = in.u32();
}

void fill_fabric(Bytes &in, fi_fabric_attr *f)
{
	f->name = in.string();
	f->prov_name = in.string();
	f->prov_version = in.u32();
	f->api_version = in.u32();
}

// Frees one attribute the fuzz input chose to leave out, so the NULL-attribute paths run.
template <typename Attr> void maybe_drop(Bytes &in, Attr *&attr)
{
	if (in.u8() < 24) {
		free(attr);
		attr = nullptr;
	}
}

// Prints the hints and the offending result before aborting, so a crash file explains itself.
[[noreturn]] void violation(const char *what, const fi_info *hints, const fi_info *info)
{
	fprintf(stderr, "property violated: %s\nhints (caps 0x%llx):\n%s\n", what,
		static_cast<unsigned long long>(hints->caps), fi_tostr(hints, FI_TYPE_INFO));
	fprintf(stderr, "result:\n%s\n", fi_tostr(info, FI_TYPE_INFO));
	abort();
}

void check_results(const fi_info *hints, uint64_t flags, const fi_info *list)
{
	for (const fi_info *info = list; info; info = info->next) {
		if (!info->fabric_attr || !info->fabric_attr->prov_name)
			violation("no provider name", hints, info);
		if (flags & FI_PROV_ATTR_ONLY)
			continue;  // only the fabric attributes are filled in then
		if (!info->ep_attr || !info->domain_attr || !info->tx_attr || !info->rx_attr)
			violation("incomplete result", hints, info);
		if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
		    info->ep_attr->type != hints->ep_attr->type)
			violation("endpoint type differs from the hints", hints, info);
		if ((info->caps & hints->caps) != hints->caps)
			violation("capabilities asked for are missing", hints, info);
		fi_info *copy = fi_dupinfo(info);
		if (!copy)
			abort();
		char buf[8192];
		fi_tostr_r(buf, sizeof(buf), copy, FI_TYPE_INFO);
		fi_freeinfo(copy);
	}
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Bytes in(data, size);
	static const char *nodes[] = {nullptr, "127.0.0.1", "::1", "0.0.0.0", "127.0.0.2",
				      "1.2.3.4.5", "", "::ffff:127.0.0.1"};
	static const char *services[] = {nullptr, "0", "25900", "65535", "65536", "-1", "",
					 "x"};
	const char *node = nodes[in.u8() % 8];
	const char *service = services[in.u8() % 8];
	uint64_t flags = in.u8() < 200 ? in.bits() & (FI_SOURCE | FI_NUMERICHOST | FI_PROV_ATTR_ONLY)
				       : in.u64();
	flags |= FI_NUMERICHOST;  // never a DNS query
	uint32_t version = in.u8() < 220 ? FI_VERSION(1, in.small(20)) : in.u32();

	fi_info *hints = nullptr;
	if (in.u8() >= 8) {  // a NULL hints pointer is allowed too
		hints = fi_allocinfo();
		if (!hints)
			return 0;
		hints->caps = in.bits();
		hints->mode = in.bits();
		hints->addr_format = in.enum_field(16);
		hints->src_addr = in.blob(&hints->src_addrlen);
		hints->dest_addr = in.blob(&hints->dest_addrlen);
		fill_tx(in, hints->tx_attr);
		fill_rx(in, hints->rx_attr);
		fill_ep(in, hints->ep_attr);
		fill_domain(in, hints->domain_attr);
		fill_fabric(in, hints->fabric_attr);
		maybe_drop(in, hints->tx_attr);
		maybe_drop(in, hints->rx_attr);
		// ep/domain/fabric attrs own pointers: drop them only when they hold none.
		if (!hints->ep_attr->auth_key)
			maybe_drop(in, hints->ep_attr);
		if (!hints->domain_attr->name && !hints->domain_attr->auth_key)
			maybe_drop(in, hints->domain_attr);
		if (!hints->fabric_attr->name && !hints->fabric_attr->prov_name)
			maybe_drop(in, hints->fabric_attr);
	}

	fi_info *result = reinterpret_cast<fi_info *>(0x1);  // must be overwritten or left alone
	int ret = fi_getinfo(version, node, service, flags, hints, &result);
	if (ret == 0) {
		if (hints)
			check_results(hints, flags, result);
		fi_freeinfo(result);
	} else if (ret > 0) {
		abort();  // errors are negative
	}
	fi_freeinfo(hints);
	return 0;
}
