// Segment: the memory one connection shares, an unnamed memfd (never a name under /dev/shm)
// sealed against shrinking and growing, so the peer can neither reach it by name nor make our
// accesses fault by truncating it. The connector creates it and passes the fd over the
// credential-checked AF_UNIX socket (SCM_RIGHTS); the acceptor checks seals and size before
// mapping. The mapping goes with the object.
#ifndef PROV_SHM_SHM_SEGMENT_H
#define PROV_SHM_SHM_SEGMENT_H

#include "prov/shm/shm_ring.h"

#include <memory>

namespace shm {

class Segment {
public:
	// Both throw util::Error.
	static std::unique_ptr<Segment> create();
	// Takes ownership of `fd` (closed in any case).
	static std::unique_ptr<Segment> adopt(int fd);
	~Segment();
	Segment(const Segment &) = delete;
	Segment &operator=(const Segment &) = delete;

	// The memfd until it has been handed to the peer (-1 afterwards or when adopted).
	int fd() const { return fd_; }
	void close_fd();
	SegmentLayout &layout() { return *layout_; }

	static constexpr size_t kSize = sizeof(SegmentLayout);

private:
	Segment(int fd, SegmentLayout *layout) : fd_(fd), layout_(layout) {}
	int fd_;
	SegmentLayout *layout_;
};

// An eventfd doorbell: ours (read in our engine) or the peer's (written by us).
// check_eventfd: true when `fd` really is an eventfd (a peer's fd is written 8 bytes at a
// time), now non-blocking.
bool check_eventfd(int fd);
void ring_doorbell(int fd);
void drain_doorbell(int fd);

} // namespace shm

#endif
