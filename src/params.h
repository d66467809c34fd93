// Internal side of the parameter registry (fi_param_define / fi_param_get / fi_getparams).
#ifndef OFI_SRC_PARAMS_H
#define OFI_SRC_PARAMS_H

#include <string>

struct fi_provider;

namespace ofi::core {

// Defines the core's own variables (FI_PROVIDER, FI_LOG_*, FI_UNIVERSE_SIZE) once.
void define_core_params();

// "FI_" + provider name + "_" + parameter, upper case, other characters as '_'.
std::string param_env_name(const fi_provider *provider, const char *param_name);

// Test hook: forgets every definition (then re-adds the core's own).
void reset_params_for_test();

} // namespace ofi::core

#endif
