/* fi_errno.h - libfabric error codes and fi_strerror(). */

#ifndef OFI_RDMA_FI_ERRNO_H_
#define OFI_RDMA_FI_ERRNO_H_

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_SUCCESS		0

/*
 * The common codes are the host's errno values, so a provider can hand a
 * negated errno straight back to the caller without translating it.
 */
#define FI_EPERM		EPERM
#define FI_ENOENT		ENOENT
#define FI_EINTR		EINTR
#define FI_EIO			EIO
#define FI_E2BIG		E2BIG
#define FI_EBADF		EBADF
#define FI_EAGAIN		EAGAIN
#define FI_ENOMEM		ENOMEM
#define FI_EACCES		EACCES
#define FI_EFAULT		EFAULT
#define FI_EBUSY		EBUSY
#define FI_ENODEV		ENODEV
#define FI_EINVAL		EINVAL
#define FI_EMFILE		EMFILE
#define FI_ENOSPC		ENOSPC
#define FI_ENOSYS		ENOSYS
#define FI_EWOULDBLOCK		EWOULDBLOCK
#define FI_ENOMSG		ENOMSG
#define FI_ENODATA		ENODATA
#define FI_EOVERFLOW		EOVERFLOW
#define FI_EMSGSIZE		EMSGSIZE
#define FI_ENOPROTOOPT		ENOPROTOOPT
#define FI_EOPNOTSUPP		EOPNOTSUPP
#define FI_EADDRINUSE		EADDRINUSE
#define FI_EADDRNOTAVAIL	EADDRNOTAVAIL
#define FI_ENETDOWN		ENETDOWN
#define FI_ENETUNREACH		ENETUNREACH
#define FI_ECONNABORTED		ECONNABORTED
#define FI_ECONNRESET		ECONNRESET
#define FI_ENOBUFS		ENOBUFS
#define FI_EISCONN		EISCONN
#define FI_ENOTCONN		ENOTCONN
#define FI_ESHUTDOWN		ESHUTDOWN
#define FI_ETIMEDOUT		ETIMEDOUT
#define FI_ECONNREFUSED		ECONNREFUSED
#define FI_EHOSTDOWN		EHOSTDOWN
#define FI_EHOSTUNREACH		EHOSTUNREACH
#define FI_EALREADY		EALREADY
#define FI_EINPROGRESS		EINPROGRESS
#define FI_EREMOTEIO		EREMOTEIO
#define FI_ECANCELED		ECANCELED
#define FI_EKEYREJECTED		EKEYREJECTED

/* Fabric-specific codes live above every errno value the host uses. */
#define FI_ERRNO_OFFSET	256

enum {
	FI_EOTHER	= FI_ERRNO_OFFSET,	/* cause not further known */
	FI_ETOOSMALL	= 257,	/* caller's buffer cannot hold the result */
	FI_EOPBADSTATE	= 258,	/* object is in the wrong state for this */
	FI_EAVAIL	= 259,	/* an error entry is waiting to be read */
	FI_EBADFLAGS	= 260,	/* flag combination not supported */
	FI_ENOEQ	= 261,	/* no usable event queue bound */
	FI_EDOMAIN	= 262,	/* resource domain is not valid */
	FI_ENOCQ	= 263,	/* no usable completion queue bound */
	FI_ECRC		= 264,	/* data failed its checksum */
	FI_ETRUNC	= 265,	/* data did not fit and was cut short */
	FI_ENOKEY	= 266,	/* a needed key is missing */
	FI_ENOAV	= 267,	/* no usable address vector bound */
	FI_EOVERRUN	= 268,	/* a queue overflowed and lost entries */
	FI_ENORX	= 269,	/* receiver had no buffer posted */
	FI_ERRNO_MAX
};

/* Accepts either sign of the code; never returns NULL. */
const char *fi_strerror(int errnum);

#ifdef __cplusplus
}
#endif

#endif /* OFI_RDMA_FI_ERRNO_H_ */
