// RxmCq: progress of the bound endpoints around util's completion queue.
#include "prov/rxm/rxm_cq.h"

#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdio>

namespace rxm {

RxmCq::RxmCq(RxmDomain &domain, const struct fi_cq_attr *attr, void *context)
    : CompletionQueue(domain, attr, context),
      eps_(domain.lock_kind() == util::Lock::Kind::Mutex)
{
	// A reader may block on an FI_WAIT_NONE CQ too: its endpoints' cores then run without
	// wait fds and the reader looks at them every tick (fd-less sources).
	allow_blocking_without_wait_obj();
	install_ops<RxmCq>();
}

void RxmCq::attach(RxmEndpoint *ep)
{
	eps_.add(ep);
	ref();
}

void RxmCq::detach(RxmEndpoint *ep)
{
	if (eps_.remove(ep))
		unref();
}

void RxmCq::run_progress()
{
	// A busy poller's usual CQ (one endpoint, a serialised domain): a tail call, no frame;
	// every other shape walks the list out of line.
	if (RxmEndpoint *only = eps_.sole_serialised())
		return only->progress();
	progress_all();
}

void RxmCq::progress_all()
{
	eps_.for_each_general([](RxmEndpoint *ep) { ep->progress(); });
}

void RxmCq::progress_for_read(size_t count)
{
	// Entries already queued are handed out without progressing first: a reader taking
	// completions one at a time then pays the cores' system calls once per batch, not once
	// per entry. Progress runs again as soon as the queue cannot fill the request.
	if (queued() < std::max<size_t>(count, 1))
		return run_progress();
}

ssize_t RxmCq::readfrom(void *buf, size_t count, fi_addr_t *src_addr)
{
	// util's readfrom with our progress in place of its virtual progress_for_read. Queued
	// entries are handed out without progressing (see progress_for_read). Only tail calls
	// here, so the read of a queued entry saves no registers for the progress path.
	note_read();
	if (queued() == 0)
		return progress_and_take(buf, count, src_addr);
	return take(buf, count, src_addr);
}

ssize_t RxmCq::progress_and_take(void *buf, size_t count, fi_addr_t *src_addr)
{
	// A busy poller's read of an empty CQ: this frame, the endpoint's pass, -FI_EAGAIN.
	run_progress();
	if (queued() == 0 && !event_fd_set() && count && buf)
		return -FI_EAGAIN;
	return take(buf, count, src_addr);
}

void RxmCq::write_error(void *context, uint64_t flags, int err, size_t len, size_t olen,
			uint64_t data, uint64_t tag, int prov_errno)
{
	fi_cq_err_entry e{};
	e.op_context = context;
	e.flags = flags;
	e.len = len;
	e.data = data;
	e.tag = tag;
	e.olen = olen;
	e.err = err;
	e.prov_errno = prov_errno;
	write_error(e);
}

ssize_t RxmCq::readerr(struct fi_cq_err_entry *buf, uint64_t flags)
{
	// Applications poll fi_cq_readerr alone too (waiting for a failure): progress first.
	run_progress();
	return CompletionQueue::readerr(buf, flags);
}

int RxmCq::control(int command, void *arg)
{
	int ret = CompletionQueue::control(command, arg);
	if (command == FI_GETWAIT && ret == 0)
		cores_wait_fd_handed_out(eps_);
	return ret;
}

const char *RxmCq::strerror(int prov_errno, const void *, char *buf, size_t len)
{
	// rxm's provider errno is an fi_errno, of either sign.
	const char *text = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		snprintf(buf, len, "%s", text);
		return buf;
	}
	return text;
}

int RxmCq::trywait_all()
{
	return trywait_with_cores(*this, eps_);
}

} // namespace rxm
