// Fake providers for the core's unit tests: a core provider "fake" offering one FI_EP_MSG and
// one FI_EP_RDM info, and a utility provider "ofi_util" that layers FI_EP_RDM over whatever
// MSG infos fi_getinfo gives it for "fake" (the way ofi_rxm layers over tcp).
#ifndef OFI_SRC_TEST_FAKE_PROVIDERS_H
#define OFI_SRC_TEST_FAKE_PROVIDERS_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include <cstdlib>

namespace fake {

extern fi_provider core_provider;    // "fake"
extern fi_provider util_provider;    // "ofi_util"
extern fi_provider second_provider;  // "other", one MSG info

// What the fakes saw on their last getinfo call.
struct Observed {
	int core_calls = 0;
	int util_calls = 0;
	const char *node = nullptr;
	const char *service = nullptr;
	uint64_t flags = 0;
	int fabric_calls = 0;
	const char *fabric_prov_name = nullptr;
};
extern Observed observed;

// Threading model the fake core provider reports (reset by Installed).
extern fi_threading threading;

// Installs the fakes as the only registered providers and clears FI_PROVIDER; undone by the
// destructor.
struct Installed {
	Installed();
	~Installed();
};

} // namespace fake

// Restores (or removes) an environment variable at scope exit.
class ScopedEnv {
public:
	ScopedEnv(const char *name, const char *value);
	~ScopedEnv();

private:
	const char *name_;
	char *saved_;
};

#endif
