// The flags each *msg call of an rxm endpoint accepts: those its man page documents for it
// (fi_msg(3), fi_tagged(3), fi_rma(3), fi_atomic(3)), the completion levels, and the bits
// naming the operation's own class (applications pass fi_info op_flags, which carry them).
// Anything else is refused with -FI_EBADFLAGS rather than silently ignored.
#ifndef OFI_PROV_RXM_FLAGS_H
#define OFI_PROV_RXM_FLAGS_H

#include <rdma/fabric.h>

#include <cstdint>

namespace rxm {

constexpr uint64_t kCompletionLevelFlags = FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
					   FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE;

constexpr uint64_t kSendMsgFlags = FI_REMOTE_CQ_DATA | FI_COMPLETION | FI_MORE | FI_INJECT |
				   FI_FENCE | kCompletionLevelFlags | FI_MSG | FI_SEND;
constexpr uint64_t kRecvMsgFlags = FI_COMPLETION | FI_MORE | FI_MULTI_RECV | FI_MSG | FI_RECV;
constexpr uint64_t kTaggedSendMsgFlags = FI_REMOTE_CQ_DATA | FI_COMPLETION | FI_MORE |
					 FI_INJECT | FI_FENCE | kCompletionLevelFlags |
					 FI_TAGGED | FI_SEND;
constexpr uint64_t kTaggedRecvMsgFlags = FI_COMPLETION | FI_MORE | FI_PEEK | FI_CLAIM |
					 FI_DISCARD | FI_TAGGED | FI_RECV;
constexpr uint64_t kRmaMsgFlags = FI_REMOTE_CQ_DATA | FI_COMPLETION | FI_MORE | FI_INJECT |
				  FI_FENCE | kCompletionLevelFlags | FI_COMMIT_COMPLETE | FI_RMA |
				  FI_READ | FI_WRITE;
constexpr uint64_t kAtomicMsgFlags = FI_COMPLETION | FI_MORE | FI_INJECT | FI_FENCE |
				     kCompletionLevelFlags | FI_ATOMIC | FI_READ | FI_WRITE;

constexpr bool flags_allowed(uint64_t flags, uint64_t allowed)
{
	return (flags & ~allowed) == 0;
}

} // namespace rxm

#endif
