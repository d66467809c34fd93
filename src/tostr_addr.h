// Prints an endpoint address in the URI-like form of its fi_info address format.
#ifndef OFI_SRC_TOSTR_ADDR_H
#define OFI_SRC_TOSTR_ADDR_H

#include "src/tostr_writer.h"

#include <cstdint>

namespace ofi::tostr {

// NULL prints "(null)"; a format (or socket family) without a printable form prints nothing.
void write_address(TextSink &out, uint32_t addr_format, const void *addr);

} // namespace ofi::tostr

#endif
