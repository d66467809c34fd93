// The providers linked into libfabric.so and the entry points the core calls to obtain them.
// This is the only place where src/ names providers (DESIGN.md rule 1): each returns its
// struct fi_provider, or NULL when the provider cannot run on this machine.
#ifndef OFI_SRC_REGISTRY_H
#define OFI_SRC_REGISTRY_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fi_provider *ofi_tcp_provider_init(void);   // prov/tcp, built when HAVE_TCP
struct fi_provider *ofi_verbs_provider_init(void); // prov/verbs, built when HAVE_VERBS
struct fi_provider *ofi_shm_provider_init(void);   // prov/shm, built when HAVE_SHM
struct fi_provider *ofi_rxm_provider_init(void);   // prov/rxm, built when HAVE_RXM

#ifdef __cplusplus
}
#endif

#endif
