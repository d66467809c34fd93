// MemberList: a doubly linked list of a domain's endpoints threaded through the endpoints
// themselves (SendFlush, StallWatch), so joining and leaving under the domain lock never
// allocates and costs a few stores. An endpoint on several lists has one MemberLinks base
// per list: each list's Member class derives from MemberLinks<Member>.
#ifndef PROV_TCP_TCP_MEMBER_LIST_H
#define PROV_TCP_TCP_MEMBER_LIST_H

namespace tcp {

template <class M> class MemberList;

template <class M> class MemberLinks {
public:
	bool listed() const { return listed_; }

protected:
	~MemberLinks() = default;

private:
	friend class MemberList<M>;
	M *next_ = nullptr;
	M *prev_ = nullptr;
	bool listed_ = false;
};

template <class M> class MemberList {
public:
	M *front() const { return head_; }
	static M *next(M *m) { return links(m)->next_; }

	// Adds m at the front; false (and nothing done) when it is listed already.
	bool push_front(M *m)
	{
		MemberLinks<M> *l = links(m);
		if (l->listed_)
			return false;
		l->listed_ = true;
		l->prev_ = nullptr;
		l->next_ = head_;
		if (head_)
			links(head_)->prev_ = m;
		head_ = m;
		return true;
	}

	void remove(M *m)
	{
		MemberLinks<M> *l = links(m);
		if (!l->listed_)
			return;
		(l->prev_ ? links(l->prev_)->next_ : head_) = l->next_;
		if (l->next_)
			links(l->next_)->prev_ = l->prev_;
		l->next_ = l->prev_ = nullptr;
		l->listed_ = false;
	}

private:
	static MemberLinks<M> *links(M *m) { return m; }

	M *head_ = nullptr;
};

} // namespace tcp

#endif
