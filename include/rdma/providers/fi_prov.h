/* providers/fi_prov.h - what a provider exports to the libfabric core. */

#ifndef OFI_RDMA_PROVIDERS_FI_PROV_H_
#define OFI_RDMA_PROVIDERS_FI_PROV_H_

#include <rdma/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A loadable provider "foo" ships as libfoo-fi.so in <libdir>/libfabric/;
 * these spell the part of that name the core looks for.
 */
#define FI_LIB_EXTENSION	"fi"
#define FI_LIB_SUFFIX		FI_LIB_EXTENSION ".so"

/*
 * Signature of the one symbol a loadable provider must export; the core
 * calls it right after dlopen(). Write "FI_EXT_INI { ... }".
 */
#define FI_EXT_INI \
	__attribute__((visibility ("default"),EXTERNALLY_VISIBLE)) \
	struct fi_provider* fi_prov_ini(void)

/* A provider as the core's registry sees it. */
struct fi_provider {
	uint32_t		version;	/* provider's own version */
	uint32_t		fi_version;	/* API version it was built for */
	struct fi_context	context;	/* reserved for the core */
	const char		*name;
	int	(*getinfo)(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints,
			   struct fi_info **info);
	int	(*fabric)(struct fi_fabric_attr *attr,
			  struct fid_fabric **fabric, void *context);
	void	(*cleanup)(void);
};

/*
 * Declares a tunable. It is read from the environment as
 * FI_<PROVIDER>_<NAME> and listed by fi_getparams() / "fi_info -e".
 */
int fi_param_define(const struct fi_provider *provider, const char *param_name,
		    enum fi_param_type type, const char *help_string_fmt, ...);

/*
 * Fetches a tunable defined above into *value, whose type must match the
 * definition. Returns -FI_ENODATA when the variable is not set.
 */
int fi_param_get(struct fi_provider *provider, const char *param_name,
		 void *value);

/* Typed wrappers so the compiler checks the destination type. */
static inline int
fi_param_get_str(struct fi_provider *provider, const char *param_name,
		 char **value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int
fi_param_get_int(struct fi_provider *provider, const char *param_name,
		 int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int
fi_param_get_bool(struct fi_provider *provider, const char *param_name,
		  int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int
fi_param_get_size_t(struct fi_provider *provider, const char *param_name,
		    size_t *value)
{
	return fi_param_get(provider, param_name, value);
}

#ifdef __cplusplus
}
#endif

#endif /* OFI_RDMA_PROVIDERS_FI_PROV_H_ */
