// A minimal intrusive doubly linked list: queue entries live in pools sized at open time, so
// linking them must not allocate (DESIGN.md rule 3).
#ifndef OFI_PROV_RXM_LIST_H
#define OFI_PROV_RXM_LIST_H

namespace rxm {

struct ListNode {
	ListNode *prev = nullptr;
	ListNode *next = nullptr;
	bool linked() const { return prev != nullptr; }
};

template <typename T> class IntrusiveList {
public:
	IntrusiveList() { head_.prev = head_.next = &head_; }
	IntrusiveList(const IntrusiveList &) = delete;
	IntrusiveList &operator=(const IntrusiveList &) = delete;

	bool empty() const { return head_.next == &head_; }
	T *front() const { return empty() ? nullptr : static_cast<T *>(head_.next); }

	void push_back(T *item)
	{
		ListNode *n = item;
		n->prev = head_.prev;
		n->next = &head_;
		head_.prev->next = n;
		head_.prev = n;
	}

	static void remove(T *item)
	{
		ListNode *n = item;
		n->prev->next = n->next;
		n->next->prev = n->prev;
		n->prev = n->next = nullptr;
	}

	T *pop_front()
	{
		T *item = front();
		if (item)
			remove(item);
		return item;
	}

	// First element satisfying pred, or nullptr.
	template <typename Pred> T *find(Pred pred) const
	{
		for (ListNode *n = head_.next; n != &head_; n = n->next)
			if (pred(*static_cast<T *>(n)))
				return static_cast<T *>(n);
		return nullptr;
	}

	template <typename Fn> void for_each(Fn fn) const
	{
		for (ListNode *n = head_.next, *next; n != &head_; n = next) {
			next = n->next; // fn may unlink n
			fn(*static_cast<T *>(n));
		}
	}

private:
	ListNode head_;
};

} // namespace rxm

#endif
