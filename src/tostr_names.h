// Symbolic names of the enum values and flag bits that fi_tostr prints.
#ifndef OFI_SRC_TOSTR_NAMES_H
#define OFI_SRC_TOSTR_NAMES_H

#include "src/tostr_writer.h"

#include <cstdint>

namespace ofi::tostr {

// Enumerations printed as one name ("Unknown" when the value has none).
enum class EnumKind {
	ep_type,
	addr_format,	// values with FI_PROV_SPECIFIC print as "Provider specific"
	protocol,	// likewise
	threading,
	progress,
	resource_mgmt,
	av_type,
	atomic_type,
	atomic_op,
	eq_event,
	op_type,
	collective_op,
	hmem_iface,
	cq_format,
	log_level,
	log_subsys,
};

// Bit masks printed as a ", "-separated list of the names of the set bits that the kind
// knows; unknown bits are left out.
enum class FlagKind {
	caps,
	op_flags,
	msg_order,
	mode,
	cq_event_flags,
	mr_mode,
};

void write_enum(TextSink &out, EnumKind kind, int64_t value);
void write_flags(TextSink &out, FlagKind kind, uint64_t value);

// Completion order is not a plain bit list: only "none", "strict" and FI_ORDER_DATA have names.
void write_comp_order(TextSink &out, uint64_t value);

} // namespace ofi::tostr

#endif
