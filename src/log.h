// Internal logging state of the core (src/ only). Providers use rdma/providers/fi_log.h or
// src/ofi_log.h instead.
#ifndef OFI_SRC_LOG_H
#define OFI_SRC_LOG_H

#include <rdma/providers/fi_log.h>

namespace ofi::core {

// The pseudo provider "core" under which the core logs and defines its own parameters.
extern struct fi_provider core_log_provider;

// Re-reads FI_LOG_LEVEL / FI_LOG_PROV / FI_LOG_SUBSYS / FI_LOG_INTERVAL (tests change them).
void reload_log_settings();

} // namespace ofi::core

#endif
