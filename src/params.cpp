// Configuration parameters: each provider declares its tunables with fi_param_define, whose
// values come from FI_<PROVIDER>_<NAME> environment variables; fi_getparams lists them all
// (what "fi_info -e" prints).
#include "src/params.h"
#include "src/log.h"
#include "src/provider_registry.h"

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace ofi::core {
namespace {

struct ParamDefinition {
	std::string env_name;
	fi_param_type type;
	std::string help;
};

std::mutex params_lock;

std::vector<ParamDefinition> &definitions()
{
	static auto *defs = new std::vector<ParamDefinition>;
	return *defs;
}

bool is_core(const fi_provider *provider)
{
	return !provider || provider == &core_log_provider;
}

const ParamDefinition *find_definition(const std::string &env_name)
{
	for (const ParamDefinition &def : definitions())
		if (def.env_name == env_name)
			return &def;
	return nullptr;
}

bool valid_type(fi_param_type type)
{
	return type == FI_PARAM_STRING || type == FI_PARAM_INT || type == FI_PARAM_BOOL ||
	       type == FI_PARAM_SIZE_T;
}

bool parse_bool(const char *text, int *value)
{
	static const char *const truths[] = {"1", "yes", "true", "on"};
	static const char *const lies[] = {"0", "no", "false", "off"};
	for (const char *t : truths)
		if (strcasecmp(text, t) == 0)
			return *value = 1, true;
	for (const char *f : lies)
		if (strcasecmp(text, f) == 0)
			return *value = 0, true;
	return false;
}

bool parse_int(const char *text, int *value)
{
	char *end;
	errno = 0;
	long parsed = std::strtol(text, &end, 0);
	if (end == text || *end || errno || parsed < INT_MIN || parsed > INT_MAX)
		return false;
	*value = int(parsed);
	return true;
}

bool parse_size(const char *text, size_t *value)
{
	while (std::isspace(static_cast<unsigned char>(*text)))
		++text;
	// strtoull would silently wrap a negative number around.
	if (*text == '-')
		return false;
	char *end;
	errno = 0;
	unsigned long long parsed = std::strtoull(text, &end, 0);
	if (end == text || *end || errno)
		return false;
	*value = size_t(parsed);
	return true;
}

int define(const fi_provider *provider, const char *param_name, fi_param_type type,
	   const std::string &help)
{
	std::string env_name = param_env_name(provider, param_name);
	std::lock_guard guard(params_lock);
	if (find_definition(env_name))
		return -FI_EALREADY;
	std::string full_help = is_core(provider) ? help : std::string(provider->name) + ": " + help;
	definitions().push_back({env_name, type, full_help});
	return 0;
}

int param_get(const fi_provider *provider, const char *param_name, void *value)
{
	if (!param_name || !value)
		return -FI_EINVAL;
	define_core_params();
	std::string env_name = param_env_name(provider, param_name);
	fi_param_type type;
	{
		std::lock_guard guard(params_lock);
		const ParamDefinition *def = find_definition(env_name);
		if (!def) {
			FI_DBG(&core_log_provider, FI_LOG_CORE, "%s was never defined\n",
			       env_name.c_str());
			return -FI_ENOENT;
		}
		type = def->type;
	}
	const char *text = std::getenv(env_name.c_str());
	if (!text) {
		FI_INFO(&core_log_provider, FI_LOG_CORE, "variable %s=<not set>\n", param_name);
		return -FI_ENODATA;
	}
	bool ok = true;
	switch (type) {
	case FI_PARAM_STRING:
		*static_cast<char **>(value) = const_cast<char *>(text);
		break;
	case FI_PARAM_INT:
		ok = parse_int(text, static_cast<int *>(value));
		break;
	case FI_PARAM_BOOL:
		ok = parse_bool(text, static_cast<int *>(value));
		break;
	case FI_PARAM_SIZE_T:
		ok = parse_size(text, static_cast<size_t *>(value));
		break;
	}
	if (!ok) {
		FI_WARN(&core_log_provider, FI_LOG_CORE, "%s: invalid value '%s'\n",
			env_name.c_str(), text);
		return -FI_EINVAL;
	}
	FI_INFO(&core_log_provider, FI_LOG_CORE, "read %s=%s\n", env_name.c_str(), text);
	return 0;
}

void free_params(fi_param *params)
{
	if (!params)
		return;
	for (fi_param *p = params; p->name; ++p) {
		std::free(const_cast<char *>(p->name));
		std::free(const_cast<char *>(p->help_string));
		std::free(const_cast<char *>(p->value));
	}
	std::free(params);
}

int get_params(fi_param **params, int *count)
{
	if (!params || !count)
		return -FI_EINVAL;
	define_core_params();
	// Providers define their parameters when they are loaded.
	registered_providers();

	std::lock_guard guard(params_lock);
	const std::vector<ParamDefinition> &defs = definitions();
	auto *list = static_cast<fi_param *>(std::calloc(defs.size() + 1, sizeof(fi_param)));
	if (!list)
		return -FI_ENOMEM;
	for (size_t i = 0; i < defs.size(); ++i) {
		const char *value = std::getenv(defs[i].env_name.c_str());
		list[i].type = defs[i].type;
		list[i].name = strdup(defs[i].env_name.c_str());
		list[i].help_string = strdup(defs[i].help.c_str());
		list[i].value = value ? strdup(value) : nullptr;
		if (!list[i].name || !list[i].help_string || (value && !list[i].value)) {
			if (!list[i].name)
				std::free(const_cast<char *>(list[i].help_string));
			free_params(list);
			return -FI_ENOMEM;
		}
	}
	*params = list;
	*count = int(defs.size());
	return 0;
}

std::once_flag core_params_once;

void define_core_params_now()
{
	fi_param_define(nullptr, "provider", FI_PARAM_STRING,
			"Only use the listed providers, e.g. tcp or verbs;ofi_rxm, comma "
			"separated; a leading ^ excludes them instead (default: all available)");
	fi_param_define(nullptr, "log_level", FI_PARAM_STRING,
			"Logging level: warn, trace, info, debug (default: no logging)");
	fi_param_define(nullptr, "log_prov", FI_PARAM_STRING,
			"Only log these providers, comma separated, ^ to exclude (default: all)");
	fi_param_define(nullptr, "log_subsys", FI_PARAM_STRING,
			"Only log these subsystems: core, fabric, domain, ep_ctrl, ep_data, av, "
			"cq, eq, mr, cntr; comma separated, ^ to exclude (default: all)");
	fi_param_define(nullptr, "log_interval", FI_PARAM_INT,
			"Minimum delay in ms between rate limited log messages (default 2000)");
	fi_param_define(nullptr, "mr_cache_max_count", FI_PARAM_SIZE_T,
			"Most registrations the MR cache keeps (verbs, local access only); 0 "
			"disables the cache (default 1024)");
	fi_param_define(nullptr, "mr_cache_max_size", FI_PARAM_SIZE_T,
			"Most bytes the MR cache keeps registered (default: physical memory "
			"divided by the number of cores)");
	fi_param_define(nullptr, "mr_cache_monitor", FI_PARAM_STRING,
			"How the MR cache learns of unmapped memory: userfaultfd (default) or "
			"disabled (no cache)");
	fi_param_define(nullptr, "universe_size", FI_PARAM_SIZE_T,
			"Expected number of processes of a distributed job; providers size "
			"their resources by it (default: provider specific)");
}

} // namespace

std::string param_env_name(const fi_provider *provider, const char *param_name)
{
	std::string raw = "FI_";
	if (!is_core(provider) && provider->name) {
		raw += provider->name;
		raw += '_';
	}
	raw += param_name;
	for (char &c : raw)
		c = std::isalnum(static_cast<unsigned char>(c))
			    ? char(std::toupper(static_cast<unsigned char>(c)))
			    : '_';
	return raw;
}

void define_core_params()
{
	std::call_once(core_params_once, define_core_params_now);
}

void reset_params_for_test()
{
	{
		std::lock_guard guard(params_lock);
		definitions().clear();
	}
	define_core_params_now();
}

} // namespace ofi::core

extern "C" {

int fi_param_define(const struct fi_provider *provider, const char *param_name,
		    enum fi_param_type type, const char *help_string_fmt, ...)
{
	if (!param_name || !*param_name || !help_string_fmt || !*help_string_fmt ||
	    !ofi::core::valid_type(type) || (provider && !provider->name))
		return -FI_EINVAL;
	try {
		char help[1024];
		va_list args;
		va_start(args, help_string_fmt);
		std::vsnprintf(help, sizeof(help), help_string_fmt, args);
		va_end(args);
		return ofi::core::define(provider, param_name, type, help);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

int fi_param_get(struct fi_provider *provider, const char *param_name, void *value)
{
	try {
		return ofi::core::param_get(provider, param_name, value);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

int fi_getparams(struct fi_param **params, int *count)
{
	try {
		return ofi::core::get_params(params, count);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

void fi_freeparams(struct fi_param *params)
{
	ofi::core::free_params(params);
}

} // extern "C"
