/* fi_cm.h: connection management and addressing calls on endpoints. */

#ifndef OFI_RDMA_FI_CM_H_
#define OFI_RDMA_FI_CM_H_

#include <rdma/fi_endpoint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Handle for a joined multicast or collective group. */
struct fid_mc {
	struct fid	fid;
	fi_addr_t	fi_addr;
};

struct fi_ops_cm {
	size_t	size;
	int	(*setname)(fid_t fid, void *addr, size_t addrlen);
	int	(*getname)(fid_t fid, void *addr, size_t *addrlen);
	int	(*getpeer)(struct fid_ep *ep, void *addr, size_t *addrlen);
	int	(*connect)(struct fid_ep *ep, const void *addr,
			   const void *param, size_t paramlen);
	int	(*listen)(struct fid_pep *pep);
	int	(*accept)(struct fid_ep *ep, const void *param,
			  size_t paramlen);
	int	(*reject)(struct fid_pep *pep, fid_t handle,
			  const void *param, size_t paramlen);
	int	(*shutdown)(struct fid_ep *ep, uint64_t flags);
	int	(*join)(struct fid_ep *ep, const void *addr, uint64_t flags,
			struct fid_mc **mc, void *context);
};

#ifdef FABRIC_DIRECT
#include <rdma/fi_direct_cm.h>
#endif

#ifndef FABRIC_DIRECT_CM

/*
 * setname/getname accept any endpoint-like fid (active or passive); both
 * keep their cm table at the same offset as fid_ep does.
 */
static inline int
fi_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->cm->setname(fid, addr, addrlen);
}

static inline int
fi_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return ep->cm->getname(fid, addr, addrlen);
}

static inline int
fi_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return ep->cm->getpeer(ep, addr, addrlen);
}

static inline int
fi_connect(struct fid_ep *ep, const void *addr,
	   const void *param, size_t paramlen)
{
	return ep->cm->connect(ep, addr, param, paramlen);
}

static inline int
fi_listen(struct fid_pep *pep)
{
	return pep->cm->listen(pep);
}

static inline int
fi_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return ep->cm->accept(ep, param, paramlen);
}

static inline int
fi_reject(struct fid_pep *pep, fid_t handle,
	  const void *param, size_t paramlen)
{
	return pep->cm->reject(pep, handle, param, paramlen);
}

static inline int
fi_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return ep->cm->shutdown(ep, flags);
}

/* join is the newest member of fi_ops_cm, so older tables may lack it. */
static inline int
fi_join(struct fid_ep *ep, const void *addr, uint64_t flags,
	struct fid_mc **mc, void *context)
{
	if (!FI_CHECK_OP(ep->cm, struct fi_ops_cm, join))
		return -FI_ENOSYS;
	return ep->cm->join(ep, addr, flags, mc, context);
}

static inline fi_addr_t
fi_mc_addr(struct fid_mc *mc)
{
	return mc->fi_addr;
}

#endif /* FABRIC_DIRECT_CM */

#ifdef __cplusplus
}
#endif

#endif /* OFI_RDMA_FI_CM_H_ */
