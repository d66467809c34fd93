/* fi_trigger.h: triggered (deferred) operations and their descriptors. */

#ifndef OFI_RDMA_FI_TRIGGER_H_
#define OFI_RDMA_FI_TRIGGER_H_

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_atomic.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What fires a triggered operation. */
enum fi_trigger_event {
	FI_TRIGGER_THRESHOLD,
	FI_TRIGGER_XPU
};

/* Kind of operation held in a fi_deferred_work. */
enum fi_op_type {
	FI_OP_RECV,
	FI_OP_SEND,
	FI_OP_TRECV,
	FI_OP_TSEND,
	FI_OP_READ,
	FI_OP_WRITE,
	FI_OP_ATOMIC,
	FI_OP_FETCH_ATOMIC,
	FI_OP_COMPARE_ATOMIC,
	FI_OP_CNTR_SET,
	FI_OP_CNTR_ADD
};

/* Fire once cntr reaches threshold. */
struct fi_trigger_threshold {
	struct fid_cntr	*cntr;
	size_t		threshold;
};

/* A value a device-side (XPU) trigger writes to addr. */
struct fi_trigger_var {
	enum fi_datatype	datatype;
	int			count;
	void			*addr;
	union {
		uint8_t		val8;
		uint16_t	val16;
		uint32_t	val32;
		uint64_t	val64;
		uint8_t		*data;
	} value;
};

/* Fire from a device (GPU) stream; var[count] describes the doorbells. */
struct fi_trigger_xpu {
	int			count;
	enum fi_hmem_iface	iface;
	union {
		uint64_t	reserved;
		int		cuda;
		int		ze;
	} device;
	struct fi_trigger_var	*var;
};

/* Deferred operation descriptors: endpoint + message + flags per op kind. */
struct fi_op_msg {
	struct fid_ep	*ep;
	struct fi_msg	msg;
	uint64_t	flags;
};

struct fi_op_tagged {
	struct fid_ep		*ep;
	struct fi_msg_tagged	msg;
	uint64_t		flags;
};

struct fi_op_rma {
	struct fid_ep		*ep;
	struct fi_msg_rma	msg;
	uint64_t		flags;
};

struct fi_op_atomic {
	struct fid_ep		*ep;
	struct fi_msg_atomic	msg;
	uint64_t		flags;
};

struct fi_op_fetch_atomic {
	struct fid_ep		*ep;
	struct fi_msg_atomic	msg;
	struct fi_msg_fetch	fetch;
	uint64_t		flags;
};

struct fi_op_compare_atomic {
	struct fid_ep		*ep;
	struct fi_msg_atomic	msg;
	struct fi_msg_fetch	fetch;
	struct fi_msg_compare	compare;
	uint64_t		flags;
};

/* Counter set/add performed when the trigger fires. */
struct fi_op_cntr {
	struct fid_cntr	*cntr;
	uint64_t	value;
};

#ifdef FABRIC_DIRECT
#include <rdma/fi_direct_trigger.h>
#endif

#ifndef FABRIC_DIRECT_TRIGGER

/*
 * Passed in place of an operation's context when FI_TRIGGER is set, so it
 * must be exactly as large as struct fi_context (resp. fi_context2).
 */
struct fi_triggered_context {
	enum fi_trigger_event			event_type;
	union {
		struct fi_trigger_threshold	threshold;
		struct fi_trigger_xpu		xpu;
		void				*internal[3];
	} trigger;
};

struct fi_triggered_context2 {
	enum fi_trigger_event			event_type;
	union {
		struct fi_trigger_threshold	threshold;
		struct fi_trigger_xpu		xpu;
		void				*internal[7];
	} trigger;
};

/* Queued to a domain with FI_QUEUE_WORK: run op once triggering_cntr >= threshold. */
struct fi_deferred_work {
	struct fi_context2	context;

	uint64_t		threshold;
	struct fid_cntr		*triggering_cntr;
	struct fid_cntr		*completion_cntr;

	enum fi_op_type		op_type;

	union {
		struct fi_op_msg		*msg;
		struct fi_op_tagged		*tagged;
		struct fi_op_rma		*rma;
		struct fi_op_atomic		*atomic;
		struct fi_op_fetch_atomic	*fetch_atomic;
		struct fi_op_compare_atomic	*compare_atomic;
		struct fi_op_cntr		*cntr;
	} op;
};

#endif /* FABRIC_DIRECT_TRIGGER */

#ifdef __cplusplus
}
#endif

#endif /* OFI_RDMA_FI_TRIGGER_H_ */
