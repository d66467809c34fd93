/* fi_endpoint.h: endpoint objects, endpoint options and the message (send/recv) API. */

#ifndef OFI_RDMA_FI_ENDPOINT_H_
#define OFI_RDMA_FI_ENDPOINT_H_

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Only the pointers are stored in fid_ep, so the tables can stay opaque here. */
struct fi_ops_cm;
struct fi_ops_rma;
struct fi_ops_tagged;
struct fi_ops_atomic;
struct fi_ops_collective;

/* Level argument of fi_setopt/fi_getopt. */
enum {
	FI_OPT_ENDPOINT
};

/* Option names at FI_OPT_ENDPOINT; the value type is noted where fixed. */
enum {
	FI_OPT_MIN_MULTI_RECV,	/* size_t */
	FI_OPT_CM_DATA_SIZE,	/* size_t */
	FI_OPT_BUFFERED_MIN,	/* size_t */
	FI_OPT_BUFFERED_LIMIT,	/* size_t */
	FI_OPT_SEND_BUF_SIZE,
	FI_OPT_RECV_BUF_SIZE,
	FI_OPT_TX_SIZE,
	FI_OPT_RX_SIZE,
	FI_OPT_FI_HMEM_P2P,	/* int, one of FI_HMEM_P2P_* */
	FI_OPT_XPU_TRIGGER	/* struct fi_trigger_xpu */
};

/* Values for FI_OPT_FI_HMEM_P2P: how strongly device peer-to-peer is wanted. */
enum {
	FI_HMEM_P2P_ENABLED,	/* default: the provider chooses */
	FI_HMEM_P2P_REQUIRED,
	FI_HMEM_P2P_PREFERRED,
	FI_HMEM_P2P_DISABLED
};

/* Describes one send or receive for fi_sendmsg/fi_recvmsg. */
struct fi_msg {
	const struct iovec	*msg_iov;
	void			**desc;
	size_t			iov_count;
	fi_addr_t		addr;
	void			*context;
	uint64_t		data;
};

/* Control operations shared by all endpoint kinds. */
struct fi_ops_ep {
	size_t	size;
	ssize_t	(*cancel)(fid_t fid, void *context);
	int	(*getopt)(fid_t fid, int level, int optname,
			  void *optval, size_t *optlen);
	int	(*setopt)(fid_t fid, int level, int optname,
			  const void *optval, size_t optlen);
	int	(*tx_ctx)(struct fid_ep *sep, int index,
			  struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			  void *context);
	int	(*rx_ctx)(struct fid_ep *sep, int index,
			  struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			  void *context);
	ssize_t	(*rx_size_left)(struct fid_ep *ep);
	ssize_t	(*tx_size_left)(struct fid_ep *ep);
};

/* Untagged message transfers. */
struct fi_ops_msg {
	size_t	size;
	ssize_t	(*recv)(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context);
	ssize_t	(*recvv)(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 void *context);
	ssize_t	(*recvmsg)(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags);
	ssize_t	(*send)(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, void *context);
	ssize_t	(*sendv)(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 void *context);
	ssize_t	(*sendmsg)(struct fid_ep *ep, const struct fi_msg *msg,
			   uint64_t flags);
	ssize_t	(*inject)(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr);
	ssize_t	(*senddata)(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    void *context);
	ssize_t	(*injectdata)(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr);
};

/*
 * An active endpoint. Providers may swap the ops pointers (e.g. on enable
 * or bind) to pick specialised data paths, which is why configuration
 * calls must not race with data transfers. A provider only needs to back
 * the tables for the capabilities it granted.
 */
struct fid_ep {
	struct fid			fid;
	struct fi_ops_ep		*ops;
	struct fi_ops_cm		*cm;
	struct fi_ops_msg		*msg;
	struct fi_ops_rma		*rma;
	struct fi_ops_tagged		*tagged;
	struct fi_ops_atomic		*atomic;
	struct fi_ops_collective	*collective;
};

/* A listening endpoint: it has no data path, only control and CM. */
struct fid_pep {
	struct fid		fid;
	struct fi_ops_ep	*ops;
	struct fi_ops_cm	*cm;
};

/* A shared transmit context. */
struct fid_stx {
	struct fid		fid;
	struct fi_ops_ep	*ops;
};

#ifdef FABRIC_DIRECT
#include <rdma/fi_direct_endpoint.h>
#endif

#ifndef FABRIC_DIRECT_ENDPOINT

/* --- creating endpoints --- */

static inline int
fi_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
	      struct fid_pep **pep, void *context)
{
	return fabric->ops->passive_ep(fabric, info, pep, context);
}

static inline int
fi_endpoint(struct fid_domain *domain, struct fi_info *info,
	    struct fid_ep **ep, void *context)
{
	return domain->ops->endpoint(domain, info, ep, context);
}

/* endpoint2 is a later addition to fi_ops_domain: use it only when flags need it. */
static inline int
fi_endpoint2(struct fid_domain *domain, struct fi_info *info,
	     struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags == 0)
		return fi_endpoint(domain, info, ep, context);
	if (!FI_CHECK_OP(domain->ops, struct fi_ops_domain, endpoint2))
		return -FI_ENOSYS;
	return domain->ops->endpoint2(domain, info, ep, flags, context);
}

static inline int
fi_scalable_ep(struct fid_domain *domain, struct fi_info *info,
	       struct fid_ep **sep, void *context)
{
	return domain->ops->scalable_ep(domain, info, sep, context);
}

static inline int
fi_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
	       struct fid_stx **stx, void *context)
{
	return domain->ops->stx_ctx(domain, attr, stx, context);
}

static inline int
fi_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
	       struct fid_ep **rx_ep, void *context)
{
	return domain->ops->srx_ctx(domain, attr, rx_ep, context);
}

static inline int
fi_tx_context(struct fid_ep *ep, int idx, struct fi_tx_attr *attr,
	      struct fid_ep **tx_ep, void *context)
{
	return ep->ops->tx_ctx(ep, idx, attr, tx_ep, context);
}

static inline int
fi_rx_context(struct fid_ep *ep, int idx, struct fi_rx_attr *attr,
	      struct fid_ep **rx_ep, void *context)
{
	return ep->ops->rx_ctx(ep, idx, attr, rx_ep, context);
}

/* --- binding, enabling, aliasing --- */

static inline int
fi_ep_bind(struct fid_ep *ep, struct fid *bfid, uint64_t flags)
{
	return ep->fid.ops->bind(&ep->fid, bfid, flags);
}

static inline int
fi_pep_bind(struct fid_pep *pep, struct fid *bfid, uint64_t flags)
{
	return pep->fid.ops->bind(&pep->fid, bfid, flags);
}

static inline int
fi_scalable_ep_bind(struct fid_ep *sep, struct fid *bfid, uint64_t flags)
{
	return sep->fid.ops->bind(&sep->fid, bfid, flags);
}

static inline int
fi_enable(struct fid_ep *ep)
{
	return ep->fid.ops->control(&ep->fid, FI_ENABLE, NULL);
}

static inline int
fi_ep_alias(struct fid_ep *ep, struct fid_ep **alias_ep, uint64_t flags)
{
	struct fid *alias_fid;
	int ret;

	ret = fi_alias(&ep->fid, &alias_fid, flags);
	if (ret == 0)
		*alias_ep = container_of(alias_fid, struct fid_ep, fid);
	return ret;
}

/*
 * cancel/setopt/getopt take a bare fid but are only valid on endpoint-like
 * objects, all of which place their fi_ops_ep right after the fid.
 */
static inline ssize_t
fi_cancel(fid_t fid, void *context)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->ops->cancel(fid, context);
}

static inline int
fi_setopt(fid_t fid, int level, int optname,
	  const void *optval, size_t optlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->ops->setopt(fid, level, optname, optval, optlen);
}

static inline int
fi_getopt(fid_t fid, int level, int optname,
	  void *optval, size_t *optlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->ops->getopt(fid, level, optname, optval, optlen);
}

static inline FI_DEPRECATED_FUNC ssize_t
fi_rx_size_left(struct fid_ep *ep)
{
	return ep->ops->rx_size_left(ep);
}

static inline FI_DEPRECATED_FUNC ssize_t
fi_tx_size_left(struct fid_ep *ep)
{
	return ep->ops->tx_size_left(ep);
}

/* --- message transfers --- */

static inline ssize_t
fi_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	fi_addr_t dest_addr, void *context)
{
	return ep->msg->send(ep, buf, len, desc, dest_addr, context);
}

static inline ssize_t
fi_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
	 size_t count, fi_addr_t dest_addr, void *context)
{
	return ep->msg->sendv(ep, iov, desc, count, dest_addr, context);
}

static inline ssize_t
fi_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	return ep->msg->sendmsg(ep, msg, flags);
}

static inline ssize_t
fi_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
	    uint64_t data, fi_addr_t dest_addr, void *context)
{
	return ep->msg->senddata(ep, buf, len, desc, data, dest_addr, context);
}

static inline ssize_t
fi_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr)
{
	return ep->msg->inject(ep, buf, len, dest_addr);
}

static inline ssize_t
fi_injectdata(struct fid_ep *ep, const void *buf, size_t len,
	      uint64_t data, fi_addr_t dest_addr)
{
	return ep->msg->injectdata(ep, buf, len, data, dest_addr);
}

static inline ssize_t
fi_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
	fi_addr_t src_addr, void *context)
{
	return ep->msg->recv(ep, buf, len, desc, src_addr, context);
}

static inline ssize_t
fi_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
	 size_t count, fi_addr_t src_addr, void *context)
{
	return ep->msg->recvv(ep, iov, desc, count, src_addr, context);
}

static inline ssize_t
fi_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	return ep->msg->recvmsg(ep, msg, flags);
}

#endif /* FABRIC_DIRECT_ENDPOINT */

#ifdef __cplusplus
}
#endif

#endif /* OFI_RDMA_FI_ENDPOINT_H_ */
