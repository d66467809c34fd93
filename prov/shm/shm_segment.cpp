#include "prov/shm/shm_segment.h"

#include "prov/shm/shm_provider.h"
#include "prov/util/error.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shm {
namespace {

constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

SegmentLayout *map_segment(int fd)
{
	void *p = mmap(nullptr, Segment::kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		FI_WARN(&provider, FI_LOG_EP_CTRL, "mmap of a segment: %s\n", strerror(errno));
		return nullptr;
	}
	return static_cast<SegmentLayout *>(p);
}

} // namespace

std::unique_ptr<Segment> Segment::create()
{
	int fd = memfd_create("fi_shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		throw util::Error(-errno);
	if (ftruncate(fd, kSize) != 0 || fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
		int err = errno;
		::close(fd);
		throw util::Error(-err);
	}
	SegmentLayout *layout = map_segment(fd);
	if (!layout) {
		::close(fd);
		throw util::Error(-FI_ENOMEM);
	}
	layout->magic = kSegmentMagic;
	layout->version = kSegmentVersion;
	layout->slot_count = kSlots;
	return std::unique_ptr<Segment>(new Segment(fd, layout));
}

std::unique_ptr<Segment> Segment::adopt(int fd)
{
	struct stat st {};
	int seals = fcntl(fd, F_GET_SEALS);
	// Only a sealed memfd of exactly our size: anything else (a file, a pipe, a memfd the
	// peer could still shrink under our mapping) is refused.
	if (seals < 0 || (seals & kSeals) != kSeals || fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) != kSize) {
		::close(fd);
		FI_WARN(&provider, FI_LOG_EP_CTRL, "peer offered an unusable segment\n");
		throw util::Error(-FI_EIO);
	}
	SegmentLayout *layout = map_segment(fd);
	::close(fd);
	if (!layout)
		throw util::Error(-FI_ENOMEM);
	std::unique_ptr<Segment> seg(new Segment(-1, layout));
	if (layout->magic != kSegmentMagic || layout->version != kSegmentVersion ||
	    layout->slot_count != kSlots) {
		FI_WARN(&provider, FI_LOG_EP_CTRL, "peer's segment has another layout\n");
		throw util::Error(-FI_EIO);
	}
	return seg;
}

Segment::~Segment()
{
	close_fd();
	munmap(layout_, kSize);
}

void Segment::close_fd()
{
	if (fd_ >= 0)
		::close(fd_);
	fd_ = -1;
}

bool check_eventfd(int fd)
{
	char path[64], target[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	if (strcmp(target, "anon_inode:[eventfd]") != 0)
		return false;
	// We write the peer's doorbell: a blocking one whose counter the peer filled up would
	// hold us in write() forever. Non-blocking, a full counter just means "already rung".
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

void ring_doorbell(int fd)
{
	uint64_t one = 1;
	// A full counter (EAGAIN) already means "wake up": nothing is lost.
	ssize_t r = ::write(fd, &one, sizeof(one));
	(void)r;
}

void drain_doorbell(int fd)
{
	uint64_t value;
	ssize_t r = ::read(fd, &value, sizeof(value));
	(void)r;
}

} // namespace shm
