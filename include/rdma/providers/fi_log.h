/* providers/fi_log.h - logging for providers, filtered by FI_LOG_* env vars. */

#ifndef OFI_RDMA_PROVIDERS_FI_LOG_H_
#define OFI_RDMA_PROVIDERS_FI_LOG_H_

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Subsystems, selectable with FI_LOG_SUBSYS. */
enum fi_log_subsys {
	FI_LOG_CORE,
	FI_LOG_FABRIC,
	FI_LOG_DOMAIN,
	FI_LOG_EP_CTRL,
	FI_LOG_EP_DATA,
	FI_LOG_AV,
	FI_LOG_CQ,
	FI_LOG_EQ,
	FI_LOG_MR,
	FI_LOG_CNTR,
	FI_LOG_SUBSYS_MAX
};

/* Ascending verbosity, selectable with FI_LOG_LEVEL. */
enum fi_log_level {
	FI_LOG_WARN,
	FI_LOG_TRACE,
	FI_LOG_INFO,
	FI_LOG_DEBUG,
	FI_LOG_MAX
};

/* Whether a message at this level/subsystem from prov would be printed. */
int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys);

/* Like fi_log_enabled, but also rate-limits using the caller's *showtime. */
int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
		 enum fi_log_subsys subsys, uint64_t *showtime);

void fi_log(const struct fi_provider *prov, enum fi_log_level level,
	    enum fi_log_subsys subsys, const char *func, int line,
	    const char *fmt, ...) FI_FORMAT_PRINTF(6, 7);

/*
 * The macros test the filter first so disabled messages cost no argument
 * evaluation, and keep errno intact so logging never changes an error path.
 */
#define FI_LOG(prov, level, subsystem, ...)				\
	do {								\
		if (fi_log_enabled(prov, level, subsystem)) {		\
			int saved_errno = errno;			\
			fi_log(prov, level, subsystem,			\
			       __func__, __LINE__, __VA_ARGS__);	\
			errno = saved_errno;				\
		}							\
	} while (0)

/* One static timestamp per call site does the rate limiting. */
#define FI_LOG_SPARSE(prov, level, subsystem, ...)			\
	do {								\
		static uint64_t showtime;				\
		if (fi_log_ready(prov, level, subsystem, &showtime)) {	\
			int saved_errno = errno;			\
			fi_log(prov, level, subsystem,			\
			       __func__, __LINE__, __VA_ARGS__);	\
			errno = saved_errno;				\
		}							\
	} while (0)

/* Prints at most once per call site for the life of the process. */
#define FI_WARN_ONCE(prov, subsystem, ...)				\
	do {								\
		static int warned = 0;					\
		if (!warned &&						\
		    fi_log_enabled(prov, FI_LOG_WARN, subsystem)) {	\
			int saved_errno = errno;			\
			fi_log(prov, FI_LOG_WARN, subsystem,		\
			       __func__, __LINE__, __VA_ARGS__);	\
			warned = 1;					\
			errno = saved_errno;				\
		}							\
	} while (0)

#define FI_WARN(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_WARN_SPARSE(prov, subsystem, ...)				\
	FI_LOG_SPARSE(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_TRACE(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#define FI_INFO(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_INFO, subsystem, __VA_ARGS__)

/* Debug-level output only exists in ENABLE_DEBUG builds. */
#if defined(ENABLE_DEBUG) && ENABLE_DEBUG
#define FI_DBG(prov, subsystem, ...)					\
	FI_LOG(prov, FI_LOG_DEBUG, subsystem, __VA_ARGS__)
#define FI_DBG_TRACE(prov, subsystem, ...)				\
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#else
#define FI_DBG(prov, subsystem, ...)				\
	do {} while (0)
#define FI_DBG_TRACE(prov, subsystem, ...)				\
	do {} while (0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* OFI_RDMA_PROVIDERS_FI_LOG_H_ */
