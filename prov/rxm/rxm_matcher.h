// Message matching for ofi_rxm: posted receives wait for messages, messages that arrive first
// wait as unexpected entries for receives. Untagged and tagged traffic use separate queues.
// The matcher only links and finds entries; their storage and the data they describe belong
// to the endpoint, which keeps this logic testable on its own.
#ifndef OFI_PROV_RXM_MATCHER_H
#define OFI_PROV_RXM_MATCHER_H

#include "prov/rxm/rxm_list.h"

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>

namespace rxm {

enum class MatchKind { msg = 0, tagged = 1 };

// What a receive accepts. source FI_ADDR_UNSPEC accepts any sender.
struct MatchSpec {
	fi_addr_t source = FI_ADDR_UNSPEC;
	uint64_t tag = 0;
	uint64_t ignore = 0;

	bool accepts(fi_addr_t from, uint64_t msg_tag) const
	{
		if (source != FI_ADDR_UNSPEC && source != from)
			return false;
		return ((tag ^ msg_tag) & ~ignore) == 0;
	}
};

struct PostedRecv : ListNode {
	MatchSpec spec;
	void *context = nullptr;
	void *owner = nullptr; // endpoint-side request
};

struct UnexpectedMsg : ListNode {
	fi_addr_t source = FI_ADDR_UNSPEC;
	uint64_t tag = 0;
	void *claim_context = nullptr; // set by FI_PEEK|FI_CLAIM, consumed by FI_CLAIM receive
	void *owner = nullptr;         // endpoint-side buffered message
};

class Matcher {
public:
	void post(MatchKind kind, PostedRecv *recv) { posted_[idx(kind)].push_back(recv); }

	// First posted receive accepting the message. It stays queued (a multi-receive buffer
	// may take more messages); the caller unlinks it with remove_posted when it is used up.
	PostedRecv *find_posted(MatchKind kind, fi_addr_t from, uint64_t tag) const
	{
		return posted_[idx(kind)].find(
			[&](const PostedRecv &r) { return r.spec.accepts(from, tag); });
	}
	static void remove_posted(PostedRecv *recv) { IntrusiveList<PostedRecv>::remove(recv); }

	// fi_cancel: unlinks the posted receive with this context, if any is queued.
	PostedRecv *cancel(void *context)
	{
		for (auto &queue : posted_) {
			PostedRecv *r = queue.find([&](const PostedRecv &p) { return p.context == context; });
			if (r) {
				queue.remove(r);
				return r;
			}
		}
		return nullptr;
	}

	void add_unexpected(MatchKind kind, UnexpectedMsg *msg) { unexpected_[idx(kind)].push_back(msg); }

	// Oldest unexpected message the spec accepts that is not held by an FI_CLAIM peek.
	UnexpectedMsg *find_unexpected(MatchKind kind, const MatchSpec &spec) const
	{
		return unexpected_[idx(kind)].find([&](const UnexpectedMsg &m) {
			return m.claim_context == nullptr && spec.accepts(m.source, m.tag);
		});
	}

	// The message an earlier FI_PEEK|FI_CLAIM with this context reserved.
	UnexpectedMsg *find_claimed(MatchKind kind, void *context) const
	{
		return unexpected_[idx(kind)].find(
			[&](const UnexpectedMsg &m) { return m.claim_context == context; });
	}

	static void remove_unexpected(UnexpectedMsg *msg) { IntrusiveList<UnexpectedMsg>::remove(msg); }

	// True if some unexpected message (of either kind) satisfies fn.
	template <typename Fn> bool any_unexpected(Fn fn) const
	{
		for (const auto &queue : unexpected_)
			if (queue.find([&](const UnexpectedMsg &m) { return fn(m); }))
				return true;
		return false;
	}
	bool posted_empty(MatchKind kind) const { return posted_[idx(kind)].empty(); }
	bool unexpected_empty(MatchKind kind) const { return unexpected_[idx(kind)].empty(); }

	template <typename Fn> void drain_posted(Fn fn)
	{
		for (auto &queue : posted_)
			while (PostedRecv *r = queue.pop_front())
				fn(r);
	}
	template <typename Fn> void drain_unexpected(Fn fn)
	{
		for (auto &queue : unexpected_)
			while (UnexpectedMsg *m = queue.pop_front())
				fn(m);
	}

private:
	static size_t idx(MatchKind kind) { return static_cast<size_t>(kind); }
	IntrusiveList<PostedRecv> posted_[2];
	IntrusiveList<UnexpectedMsg> unexpected_[2];
};

} // namespace rxm

#endif
