// Ops tables generated from a class's member functions (see ops_thunk.h).
//
// Method names are the public API names without the "fi_" prefix, so one class can serve
// several tables without clashes: msg uses send/recv/..., tagged uses tsend/trecv/...,
// rma uses read/write/inject_write/..., atomic uses atomic/fetch_atomic/compare_atomic/...,
// mr uses mr_reg/mr_regv/mr_regattr. Members take the entry's arguments without the
// leading fid, e.g.
//     ssize_t send(const void *buf, size_t len, void *desc, fi_addr_t dest, void *ctx);
// Anything T does not define returns -FI_ENOSYS, so every entry is non-NULL.
//
// Usage: static constexpr fi_ops_msg kMsgOps = util::make_msg_ops<TcpEndpoint>();
// or, simpler, let the base classes install all tables (Endpoint::install_ops<Self>()).
#ifndef OFI_PROV_UTIL_OPS_TABLES_H
#define OFI_PROV_UTIL_OPS_TABLES_H

#include "prov/util/ops_thunk.h"

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

namespace util {

// fi_close / fi_bind / fi_control / fi_open_ops / fi_tostr / fi_set_ops.
template <class T>
constexpr fi_ops make_fi_ops()
{
	fi_ops t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, close, close);
	UTIL_OPS_ENTRY(T, t, bind, bind);
	UTIL_OPS_ENTRY(T, t, control, control);
	UTIL_OPS_ENTRY(T, t, ops_open, ops_open);
	UTIL_OPS_ENTRY(T, t, tostr, tostr);
	UTIL_OPS_ENTRY(T, t, ops_set, ops_set);
	return t;
}

template <class T>
constexpr fi_ops_fabric make_fabric_ops()
{
	fi_ops_fabric t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, domain, domain);
	UTIL_OPS_ENTRY(T, t, passive_ep, passive_ep);
	UTIL_OPS_ENTRY(T, t, eq_open, eq_open);
	UTIL_OPS_ENTRY(T, t, wait_open, wait_open);
	UTIL_OPS_ENTRY(T, t, trywait, trywait);
	UTIL_OPS_ENTRY(T, t, domain2, domain2);
	return t;
}

template <class T>
constexpr fi_ops_domain make_domain_ops()
{
	fi_ops_domain t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, av_open, av_open);
	UTIL_OPS_ENTRY(T, t, cq_open, cq_open);
	UTIL_OPS_ENTRY(T, t, endpoint, endpoint);
	UTIL_OPS_ENTRY(T, t, scalable_ep, scalable_ep);
	UTIL_OPS_ENTRY(T, t, cntr_open, cntr_open);
	UTIL_OPS_ENTRY(T, t, poll_open, poll_open);
	UTIL_OPS_ENTRY(T, t, stx_ctx, stx_context);
	UTIL_OPS_ENTRY(T, t, srx_ctx, srx_context);
	UTIL_OPS_ENTRY(T, t, query_atomic, query_atomic);
	UTIL_OPS_ENTRY(T, t, query_collective, query_collective);
	UTIL_OPS_ENTRY(T, t, endpoint2, endpoint2);
	return t;
}

template <class T>
constexpr fi_ops_mr make_mr_ops()
{
	fi_ops_mr t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, reg, mr_reg);
	UTIL_OPS_ENTRY(T, t, regv, mr_regv);
	UTIL_OPS_ENTRY(T, t, regattr, mr_regattr);
	return t;
}

template <class T>
constexpr fi_ops_ep make_ep_ops()
{
	fi_ops_ep t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, cancel, cancel);
	UTIL_OPS_ENTRY(T, t, getopt, getopt);
	UTIL_OPS_ENTRY(T, t, setopt, setopt);
	UTIL_OPS_ENTRY(T, t, tx_ctx, tx_context);
	UTIL_OPS_ENTRY(T, t, rx_ctx, rx_context);
	UTIL_OPS_ENTRY(T, t, rx_size_left, rx_size_left);
	UTIL_OPS_ENTRY(T, t, tx_size_left, tx_size_left);
	return t;
}

template <class T>
constexpr fi_ops_cm make_cm_ops()
{
	fi_ops_cm t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, setname, setname);
	UTIL_OPS_ENTRY(T, t, getname, getname);
	UTIL_OPS_ENTRY(T, t, getpeer, getpeer);
	UTIL_OPS_ENTRY(T, t, connect, connect);
	UTIL_OPS_ENTRY(T, t, listen, listen);
	UTIL_OPS_ENTRY(T, t, accept, accept);
	UTIL_OPS_ENTRY(T, t, reject, reject);
	UTIL_OPS_ENTRY(T, t, shutdown, shutdown);
	UTIL_OPS_ENTRY(T, t, join, join);
	return t;
}

template <class T>
constexpr fi_ops_msg make_msg_ops()
{
	fi_ops_msg t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, recv, recv);
	UTIL_OPS_ENTRY(T, t, recvv, recvv);
	UTIL_OPS_ENTRY(T, t, recvmsg, recvmsg);
	UTIL_OPS_ENTRY(T, t, send, send);
	UTIL_OPS_ENTRY(T, t, sendv, sendv);
	UTIL_OPS_ENTRY(T, t, sendmsg, sendmsg);
	UTIL_OPS_ENTRY(T, t, inject, inject);
	UTIL_OPS_ENTRY(T, t, senddata, senddata);
	UTIL_OPS_ENTRY(T, t, injectdata, injectdata);
	return t;
}

template <class T>
constexpr fi_ops_tagged make_tagged_ops()
{
	fi_ops_tagged t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, recv, trecv);
	UTIL_OPS_ENTRY(T, t, recvv, trecvv);
	UTIL_OPS_ENTRY(T, t, recvmsg, trecvmsg);
	UTIL_OPS_ENTRY(T, t, send, tsend);
	UTIL_OPS_ENTRY(T, t, sendv, tsendv);
	UTIL_OPS_ENTRY(T, t, sendmsg, tsendmsg);
	UTIL_OPS_ENTRY(T, t, inject, tinject);
	UTIL_OPS_ENTRY(T, t, senddata, tsenddata);
	UTIL_OPS_ENTRY(T, t, injectdata, tinjectdata);
	return t;
}

template <class T>
constexpr fi_ops_rma make_rma_ops()
{
	fi_ops_rma t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, read, read);
	UTIL_OPS_ENTRY(T, t, readv, readv);
	UTIL_OPS_ENTRY(T, t, readmsg, readmsg);
	UTIL_OPS_ENTRY(T, t, write, write);
	UTIL_OPS_ENTRY(T, t, writev, writev);
	UTIL_OPS_ENTRY(T, t, writemsg, writemsg);
	UTIL_OPS_ENTRY(T, t, inject, inject_write);
	UTIL_OPS_ENTRY(T, t, writedata, writedata);
	UTIL_OPS_ENTRY(T, t, injectdata, inject_writedata);
	return t;
}

template <class T>
constexpr fi_ops_atomic make_atomic_ops()
{
	fi_ops_atomic t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, write, atomic);
	UTIL_OPS_ENTRY(T, t, writev, atomicv);
	UTIL_OPS_ENTRY(T, t, writemsg, atomicmsg);
	UTIL_OPS_ENTRY(T, t, inject, inject_atomic);
	UTIL_OPS_ENTRY(T, t, readwrite, fetch_atomic);
	UTIL_OPS_ENTRY(T, t, readwritev, fetch_atomicv);
	UTIL_OPS_ENTRY(T, t, readwritemsg, fetch_atomicmsg);
	UTIL_OPS_ENTRY(T, t, compwrite, compare_atomic);
	UTIL_OPS_ENTRY(T, t, compwritev, compare_atomicv);
	UTIL_OPS_ENTRY(T, t, compwritemsg, compare_atomicmsg);
	UTIL_OPS_ENTRY(T, t, writevalid, atomicvalid);
	UTIL_OPS_ENTRY(T, t, readwritevalid, fetch_atomicvalid);
	UTIL_OPS_ENTRY(T, t, compwritevalid, compare_atomicvalid);
	return t;
}

template <class T>
constexpr fi_ops_collective make_collective_ops()
{
	fi_ops_collective t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, barrier, barrier);
	UTIL_OPS_ENTRY(T, t, broadcast, broadcast);
	UTIL_OPS_ENTRY(T, t, alltoall, alltoall);
	UTIL_OPS_ENTRY(T, t, allreduce, allreduce);
	UTIL_OPS_ENTRY(T, t, allgather, allgather);
	UTIL_OPS_ENTRY(T, t, reduce_scatter, reduce_scatter);
	UTIL_OPS_ENTRY(T, t, reduce, reduce);
	UTIL_OPS_ENTRY(T, t, scatter, scatter);
	UTIL_OPS_ENTRY(T, t, gather, gather);
	UTIL_OPS_ENTRY(T, t, msg, collective_msg);
	UTIL_OPS_ENTRY(T, t, barrier2, barrier2);
	return t;
}

template <class T>
constexpr fi_ops_cq make_cq_ops()
{
	fi_ops_cq t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, read, read);
	UTIL_OPS_ENTRY(T, t, readfrom, readfrom);
	UTIL_OPS_ENTRY(T, t, readerr, readerr);
	UTIL_OPS_ENTRY(T, t, sread, sread);
	UTIL_OPS_ENTRY(T, t, sreadfrom, sreadfrom);
	UTIL_OPS_ENTRY(T, t, signal, signal);
	UTIL_OPS_ENTRY(T, t, strerror, strerror);
	return t;
}

template <class T>
constexpr fi_ops_eq make_eq_ops()
{
	fi_ops_eq t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, read, read);
	UTIL_OPS_ENTRY(T, t, readerr, readerr);
	UTIL_OPS_ENTRY(T, t, write, write);
	UTIL_OPS_ENTRY(T, t, sread, sread);
	UTIL_OPS_ENTRY(T, t, strerror, strerror);
	return t;
}

template <class T>
constexpr fi_ops_cntr make_cntr_ops()
{
	fi_ops_cntr t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, read, read);
	UTIL_OPS_ENTRY(T, t, readerr, readerr);
	UTIL_OPS_ENTRY(T, t, add, add);
	UTIL_OPS_ENTRY(T, t, set, set);
	UTIL_OPS_ENTRY(T, t, wait, wait);
	UTIL_OPS_ENTRY(T, t, adderr, adderr);
	UTIL_OPS_ENTRY(T, t, seterr, seterr);
	return t;
}

template <class T>
constexpr fi_ops_av make_av_ops()
{
	fi_ops_av t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, insert, insert);
	UTIL_OPS_ENTRY(T, t, insertsvc, insertsvc);
	UTIL_OPS_ENTRY(T, t, insertsym, insertsym);
	UTIL_OPS_ENTRY(T, t, remove, remove);
	UTIL_OPS_ENTRY(T, t, lookup, lookup);
	UTIL_OPS_ENTRY(T, t, straddr, straddr);
	UTIL_OPS_ENTRY(T, t, av_set, av_set);
	return t;
}

template <class T>
constexpr fi_ops_wait make_wait_ops()
{
	fi_ops_wait t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, wait, wait);
	return t;
}

template <class T>
constexpr fi_ops_poll make_poll_ops()
{
	fi_ops_poll t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, poll, poll);
	UTIL_OPS_ENTRY(T, t, poll_add, poll_add);
	UTIL_OPS_ENTRY(T, t, poll_del, poll_del);
	return t;
}

template <class T>
constexpr fi_ops_av_set make_av_set_ops()
{
	fi_ops_av_set t{};
	t.size = sizeof(t);
	UTIL_OPS_ENTRY(T, t, set_union, set_union);
	UTIL_OPS_ENTRY(T, t, intersect, intersect);
	UTIL_OPS_ENTRY(T, t, diff, diff);
	UTIL_OPS_ENTRY(T, t, insert, insert);
	UTIL_OPS_ENTRY(T, t, remove, remove);
	UTIL_OPS_ENTRY(T, t, addr, addr);
	return t;
}

// One static instance of each table per class, so objects can point at them.
template <class T, auto Maker>
struct StaticOps {
	static constexpr auto table = Maker();
};

// The C structs hold non-const pointers to ops tables; the tables are never written through
// them, so handing out a pointer to the constexpr table is safe.
template <class T, auto Maker>
auto *ops_ptr() noexcept
{
	using Table = std::remove_const_t<decltype(StaticOps<T, Maker>::table)>;
	return const_cast<Table *>(&StaticOps<T, Maker>::table);
}

// Checked recovery without an RTTI walk, for fids looked up on the data path (a memory
// descriptor per send, a credit check per message): a live fid whose fi_ops is the table
// generated for T (ops_ptr<T, make_fi_ops<T>>) is a T object; anything else gives nullptr.
template <class T>
T *fid_cast_exact(const struct fid *fid) noexcept
{
	FidHeader *header = fid_header(fid);
	if (!header || fid->ops != ops_ptr<T, make_fi_ops<T>>())
		return nullptr;
	return static_cast<T *>(header->owner);
}

} // namespace util

#endif
