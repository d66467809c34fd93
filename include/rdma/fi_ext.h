/* fi_ext.h: extension interfaces (fid export/import, peer providers, imported monitors and logging). */

#ifndef OFI_RDMA_FI_EXT_H_
#define OFI_RDMA_FI_EXT_H_

#include <stdbool.h>
#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_endpoint.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Provider-specific values are negative. Each provider owns a 12-bit code
 * shifted left by 16 (top 4 bits stay clear); the low 16 bits are its own.
 */
#define FI_PROV_SPECIFIC_EFA	(0xefa << 16)
#define FI_PROV_SPECIFIC_TCP	(0x7cb << 16)

/* Provider-specific endpoint option names. */
enum {
	FI_OPT_EFA_RNR_RETRY = -FI_PROV_SPECIFIC_EFA
};

/* ---- exporting and importing fids ---- */

/* Argument of fi_control(FI_EXPORT_FID). */
struct fi_fid_export {
	struct fid	**fid;
	uint64_t	flags;
	void		*context;
};

static inline int
fi_export_fid(struct fid *fid, uint64_t flags, struct fid **expfid,
	      void *context)
{
	struct fi_fid_export request;

	request.fid = expfid;
	request.flags = flags;
	request.context = context;
	return fi_control(fid, FI_EXPORT_FID, &request);
}

/* Importing is expressed as binding the exported object to the importer. */
static inline int
fi_import_fid(struct fid *fid, struct fid *expfid, uint64_t flags)
{
	return fid->ops->bind(fid, expfid, flags);
}

/* ---- memory monitor import (open the "mr_cache" fid, then import) ---- */

struct fid_mem_monitor;

/* Implemented by the application's monitor, called by the provider. */
struct fi_ops_mem_monitor {
	size_t	size;
	int	(*start)(struct fid_mem_monitor *monitor);
	void	(*stop)(struct fid_mem_monitor *monitor);
	int	(*subscribe)(struct fid_mem_monitor *monitor,
			     const void *addr, size_t len);
	void	(*unsubscribe)(struct fid_mem_monitor *monitor,
			       const void *addr, size_t len);
	bool	(*valid)(struct fid_mem_monitor *monitor,
			 const void *addr, size_t len);
};

/* Implemented by the provider, called by the monitor on invalidation. */
struct fi_ops_mem_notify {
	size_t	size;
	void	(*notify)(struct fid_mem_monitor *monitor, const void *addr,
			  size_t len);
};

struct fid_mem_monitor {
	struct fid			fid;
	struct fi_ops_mem_monitor	*export_ops;
	struct fi_ops_mem_notify	*import_ops;
};

/* ---- peer providers: objects owned by one provider, used by another ---- */

struct fid_peer_av;

struct fi_ops_av_owner {
	size_t		size;
	int		(*query)(struct fid_peer_av *av,
				 struct fi_av_attr *attr);
	fi_addr_t	(*ep_addr)(struct fid_peer_av *av, struct fid_ep *ep);
};

struct fid_peer_av {
	struct fid		fid;
	struct fi_ops_av_owner	*owner_ops;
};

/* The member type is spelled struct fi_peer_av upstream; kept for source compatibility. */
struct fi_peer_av_context {
	size_t			size;
	struct fi_peer_av	*av;
};

struct fid_peer_av_set;

struct fi_ops_av_set_owner {
	size_t	size;
	int	(*members)(struct fid_peer_av_set *av, fi_addr_t *addr,
			   size_t *count);
};

struct fid_peer_av_set {
	struct fid			fid;
	struct fi_ops_av_set_owner	*owner_ops;
};

/* As above, the member type keeps the upstream spelling struct fi_peer_av_set. */
struct fi_peer_av_set_context {
	size_t			size;
	struct fi_peer_av_set	*av_set;
};

struct fid_peer_cq;

/* The owner's CQ accepts completions written by the peer. */
struct fi_ops_cq_owner {
	size_t	size;
	ssize_t	(*write)(struct fid_peer_cq *cq, void *context, uint64_t flags,
			 size_t len, void *buf, uint64_t data, uint64_t tag,
			 fi_addr_t src);
	ssize_t	(*writeerr)(struct fid_peer_cq *cq,
			    const struct fi_cq_err_entry *err_entry);
};

struct fid_peer_cq {
	struct fid		fid;
	struct fi_ops_cq_owner	*owner_ops;
};

struct fi_peer_cq_context {
	size_t			size;
	struct fid_peer_cq	*cq;
};

struct fi_peer_domain_context {
	size_t			size;
	struct fid_domain	*domain;
};

struct fi_peer_eq_context {
	size_t		size;
	struct fid_eq	*eq;
};

/* ---- peer shared receive context ---- */

struct fid_peer_srx;

/* A posted or unexpected receive; next/prev first so it can sit on a dlist. */
struct fi_peer_rx_entry {
	struct fi_peer_rx_entry	*next;
	struct fi_peer_rx_entry	*prev;
	struct fid_peer_srx	*srx;
	fi_addr_t		addr;
	size_t			size;
	uint64_t		tag;
	uint64_t		flags;
	void			*context;
	size_t			count;
	void			**desc;
	void			*peer_context;
	void			*owner_context;
	struct iovec		*iov;
};

/* Called by the peer on the owner's receive queues. */
struct fi_ops_srx_owner {
	size_t	size;
	int	(*get_msg)(struct fid_peer_srx *srx, fi_addr_t addr,
			   size_t size, struct fi_peer_rx_entry **entry);
	int	(*get_tag)(struct fid_peer_srx *srx, fi_addr_t addr,
			   uint64_t tag, struct fi_peer_rx_entry **entry);
	int	(*queue_msg)(struct fi_peer_rx_entry *entry);
	int	(*queue_tag)(struct fi_peer_rx_entry *entry);
	void	(*free_entry)(struct fi_peer_rx_entry *entry);
};

/* Called by the owner when a queued unexpected message gets matched. */
struct fi_ops_srx_peer {
	size_t	size;
	int	(*start_msg)(struct fi_peer_rx_entry *entry);
	int	(*start_tag)(struct fi_peer_rx_entry *entry);
	int	(*discard_msg)(struct fi_peer_rx_entry *entry);
	int	(*discard_tag)(struct fi_peer_rx_entry *entry);
};

struct fid_peer_srx {
	struct fid_ep		ep_fid;
	struct fi_ops_srx_owner	*owner_ops;
	struct fi_ops_srx_peer	*peer_ops;
};

struct fi_peer_srx_context {
	size_t			size;
	struct fid_peer_srx	*srx;
};

/* ---- peer transfers ---- */

struct fi_peer_transfer_context;

struct fi_ops_transfer_peer {
	size_t	size;
	ssize_t	(*complete)(struct fid_ep *ep, struct fi_cq_tagged_entry *buf,
			    fi_addr_t *src_addr);
	ssize_t	(*comperr)(struct fid_ep *ep, struct fi_cq_err_entry *buf);
};

struct fi_peer_transfer_context {
	size_t				size;
	struct fi_info			*info;
	struct fid_ep			*ep;
	struct fi_ops_transfer_peer	*peer_ops;
};

/* ---- logging import (open the "logging" fid, then import) ---- */

/* Flag for fi_ops_log.enabled/ready: the provider filter already applied. */
#define FI_LOG_PROV_FILTERED	(1ULL << 0)

struct fi_ops_log {
	size_t	size;
	int	(*enabled)(const struct fi_provider *prov,
			   enum fi_log_level level,
			   enum fi_log_subsys subsys, uint64_t flags);
	int	(*ready)(const struct fi_provider *prov,
			 enum fi_log_level level, enum fi_log_subsys subsys,
			 uint64_t flags, uint64_t *showtime);
	void	(*log)(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, const char *func, int line,
		       const char *msg);
};

struct fid_logging {
	struct fid		fid;
	struct fi_ops_log	*ops;
};

/* Open the named import point, bind fid to it, and drop the opened handle. */
static inline int
fi_import(uint32_t version, const char *name, void *attr, size_t attr_len,
	  uint64_t flags, struct fid *fid, void *context)
{
	struct fid *import_point;
	int ret;

	ret = fi_open(version, name, attr, attr_len, flags, &import_point,
		      context);
	if (ret != FI_SUCCESS)
		return ret;

	ret = fi_import_fid(import_point, fid, flags);
	fi_close(import_point);
	return ret;
}

static inline int
fi_import_log(uint32_t version, uint64_t flags, struct fid_logging *log_fid)
{
	log_fid->fid.fclass = FI_CLASS_LOG;
	log_fid->ops->size = sizeof(struct fi_ops_log);

	return fi_import(version, "logging", NULL, 0, flags, &log_fid->fid,
			 log_fid);
}

#ifdef __cplusplus
}
#endif

#endif /* OFI_RDMA_FI_EXT_H_ */
