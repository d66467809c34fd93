#include "prov/util/endpoint.h"

#include <atomic>

#include "prov/util/address_vector.h"
#include "prov/util/completion_queue.h"
#include "prov/util/counter.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"
#include "prov/util/remote_write_context.h"

#include <cstring>

namespace util {

namespace {
std::atomic<uint64_t> next_access_id{1};
} // namespace

Endpoint::Endpoint(Domain &domain, const struct fi_info *info, void *context, size_t fclass)
    : FidObject(embedded_fid, fclass, context), domain_(domain),
      access_id_(next_access_id.fetch_add(1, std::memory_order_relaxed))
{
	if (info && info->tx_attr)
		tx_op_flags_ = info->tx_attr->op_flags;
	if (info && info->rx_attr)
		rx_op_flags_ = info->rx_attr->op_flags;
	install_ops<Endpoint>();
	domain_.ref();
}

Endpoint::~Endpoint()
{
	unbind_all();
	domain_.unref();
}

void Endpoint::unbind_all() noexcept
{
	if (tx_cq_)
		tx_cq_->unref();
	if (rx_cq_)
		rx_cq_->unref();
	tx_cq_ = rx_cq_ = nullptr;
	for (Counter *&cntr : counters_) {
		if (cntr)
			cntr->unref();
		cntr = nullptr;
	}
	if (eq_)
		eq_->unref();
	eq_ = nullptr;
	if (av_)
		av_->unref();
	av_ = nullptr;
}

int Endpoint::bind_cq(CompletionQueue *cq, uint64_t flags)
{
	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EBADFLAGS;
	if (&cq->domain() != &domain_)
		return -FI_EINVAL;
	if (((flags & FI_TRANSMIT) && tx_cq_) || ((flags & FI_RECV) && rx_cq_))
		return -FI_EALREADY;
	bool selective = flags & FI_SELECTIVE_COMPLETION;
	if (flags & FI_TRANSMIT) {
		cq->ref();
		tx_cq_ = cq;
		tx_selective_ = selective;
	}
	if (flags & FI_RECV) {
		cq->ref();
		rx_cq_ = cq;
		rx_selective_ = selective;
	}
	return 0;
}

int Endpoint::bind_counter(Counter *cntr, uint64_t flags)
{
	static constexpr struct {
		uint64_t flag;
		CounterSlot slot;
	} kSlots[] = {
		{FI_SEND, kSendCntr},	      {FI_RECV, kRecvCntr},
		{FI_READ, kReadCntr},	      {FI_WRITE, kWriteCntr},
		{FI_REMOTE_READ, kRemoteReadCntr}, {FI_REMOTE_WRITE, kRemoteWriteCntr},
	};
	uint64_t known = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
			 FI_REMOTE_WRITE;
	if (!flags || (flags & ~known))
		return -FI_EBADFLAGS;
	if (&cntr->domain() != &domain_)
		return -FI_EINVAL;
	for (const auto &entry : kSlots)
		if ((flags & entry.flag) && counters_[entry.slot])
			return -FI_EALREADY;
	for (const auto &entry : kSlots) {
		if (flags & entry.flag) {
			cntr->ref();
			counters_[entry.slot] = cntr;
		}
	}
	return 0;
}

int Endpoint::bind(struct fid *bfid, uint64_t flags)
{
	if (!bfid)
		return -FI_EINVAL;
	if (enabled_)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_CQ: {
		auto *cq = fid_cast<CompletionQueue>(bfid, FI_CLASS_CQ);
		return cq ? bind_cq(cq, flags) : -FI_EINVAL;
	}
	case FI_CLASS_CNTR: {
		auto *cntr = fid_cast<Counter>(bfid, FI_CLASS_CNTR);
		return cntr ? bind_counter(cntr, flags) : -FI_EINVAL;
	}
	case FI_CLASS_EQ: {
		auto *eq = fid_cast<EventQueue>(bfid, FI_CLASS_EQ);
		if (!eq || &eq->fabric() != &domain_.fabric())
			return -FI_EINVAL;
		if (flags)
			return -FI_EBADFLAGS;
		if (eq_)
			return -FI_EALREADY;
		eq->ref();
		eq_ = eq;
		return 0;
	}
	case FI_CLASS_AV: {
		auto *av = fid_cast<AddressVector>(bfid, FI_CLASS_AV);
		if (!av || &av->domain() != &domain_)
			return -FI_EINVAL;
		if (flags)
			return -FI_EBADFLAGS;
		if (av_)
			return -FI_EALREADY;
		av->ref();
		av_ = av;
		return 0;
	}
	default:
		return -FI_EINVAL;
	}
}

bool Endpoint::has_completion_target() const noexcept
{
	bool has_counter = false;
	for (Counter *cntr : counters_)
		has_counter = has_counter || cntr;
	return tx_cq_ || rx_cq_ || has_counter;
}

int Endpoint::enable()
{
	if (!has_completion_target())
		return -FI_ENOCQ;
	enabled_ = true;
	return 0;
}

int Endpoint::control(int command, void *arg)
{
	switch (command) {
	case FI_ENABLE: {
		if (enabled_)
			return 0;
		int rc = enable();
		if (rc == 0)
			enabled_ = true;
		return rc;
	}
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG: {
		if (!arg)
			return -FI_EINVAL;
		auto *value = static_cast<uint64_t *>(arg);
		bool tx = *value & FI_TRANSMIT;
		bool rx = *value & FI_RECV;
		if (tx == rx)  // exactly one direction must be named
			return -FI_EINVAL;
		uint64_t &target = tx ? tx_op_flags_ : rx_op_flags_;
		if (command == FI_GETOPSFLAG) {
			*value = target | (tx ? FI_TRANSMIT : FI_RECV);
		} else {
			target = *value & ~(FI_TRANSMIT | FI_RECV);
		}
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

int Endpoint::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

int Endpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen)
		return -FI_EINVAL;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (*optlen < sizeof(size_t)) {
			*optlen = sizeof(size_t);
			return -FI_ETOOSMALL;
		}
		*static_cast<size_t *>(optval) = min_multi_recv_;
		*optlen = sizeof(size_t);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

int Endpoint::setopt(int level, int optname, const void *optval, size_t optlen)
{
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (!optval)
		return -FI_EINVAL;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (optlen != sizeof(size_t))
			return -FI_EINVAL;
		min_multi_recv_ = *static_cast<const size_t *>(optval);
		return 0;
	case OFI_OPT_REMOTE_WRITE_CONTEXT:
		if (optlen != sizeof(void *))
			return -FI_EINVAL;
		remote_write_context_ = *static_cast<void *const *>(optval);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

// ---- completion helpers ----

namespace {

Endpoint::CounterSlot tx_counter_slot(uint64_t cq_flags)
{
	if (cq_flags & FI_READ)
		return Endpoint::kReadCntr;
	if (cq_flags & FI_WRITE)
		return Endpoint::kWriteCntr;
	return Endpoint::kSendCntr;
}

} // namespace

void Endpoint::complete_tx(uint64_t op_flags, void *context, uint64_t cq_flags, size_t len,
			   uint64_t data, uint64_t tag)
{
	if (tx_entry_wanted(op_flags))
		tx_cq_->write(context, cq_flags, len, nullptr, data, tag);
	count_tx(cq_flags);
}

void Endpoint::count_tx(uint64_t cq_flags)
{
	if (Counter *cntr = counters_[tx_counter_slot(cq_flags)])
		cntr->increment();
}

void Endpoint::complete_rx(uint64_t op_flags, void *context, uint64_t cq_flags, size_t len,
			   void *buf, uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	// A posted receive reports only if wanted (fi_endpoint(3) FI_SELECTIVE_COMPLETION),
	// also when the message carried remote CQ data. RMA writes with data, which consume no
	// posted receive and are always reported, come with FI_COMPLETION from the provider.
	if (rx_entry_wanted(op_flags))
		rx_cq_->write(context, cq_flags, len, buf, data, tag, src_addr);
	count_rx(cq_flags);
}

void Endpoint::count_rx(uint64_t cq_flags)
{
	if ((cq_flags & FI_RECV) && counters_[kRecvCntr])
		counters_[kRecvCntr]->increment();
}

void Endpoint::fail_tx(void *context, uint64_t cq_flags, int err, int prov_errno, size_t len,
		       uint64_t data, uint64_t tag)
{
	if (tx_cq_) {
		struct fi_cq_err_entry entry{};
		entry.op_context = context;
		entry.flags = cq_flags;
		entry.len = len;
		entry.data = data;
		entry.tag = tag;
		entry.err = err < 0 ? -err : err;
		entry.prov_errno = prov_errno;
		tx_cq_->write_error(entry);
	}
	if (Counter *cntr = counters_[tx_counter_slot(cq_flags)])
		cntr->increment_error();
}

void Endpoint::fail_rx(void *context, uint64_t cq_flags, int err, int prov_errno, size_t len,
		       void *buf, size_t olen, uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	if (rx_cq_) {
		struct fi_cq_err_entry entry{};
		entry.op_context = context;
		entry.flags = cq_flags;
		entry.len = len;
		entry.buf = buf;
		entry.data = data;
		entry.tag = tag;
		entry.olen = olen;
		entry.err = err < 0 ? -err : err;
		entry.prov_errno = prov_errno;
		rx_cq_->write_error(entry, src_addr);
	}
	if (counters_[kRecvCntr])
		counters_[kRecvCntr]->increment_error();
}

void Endpoint::count_remote(uint64_t cq_flags)
{
	if ((cq_flags & FI_REMOTE_READ) && counters_[kRemoteReadCntr])
		counters_[kRemoteReadCntr]->increment();
	if ((cq_flags & FI_REMOTE_WRITE) && counters_[kRemoteWriteCntr])
		counters_[kRemoteWriteCntr]->increment();
}

} // namespace util
