#include "prov/util/random_key.h"

#include <rdma/fi_domain.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>

namespace util {

namespace {

constexpr size_t kBatch = 32;

struct KeyBatch {
	uint64_t keys[kBatch];
	size_t left = 0;
};
thread_local KeyBatch batch;

// A child after fork() must not hand out the keys its parent still has in the batch (only
// the forking thread lives on in the child, so resetting its batch is enough).
void forget_batch_in_child() { batch.left = 0; }
[[maybe_unused]] const int atfork_registered = pthread_atfork(nullptr, nullptr, forget_batch_in_child);

bool fill_from_urandom(void *buf, size_t len)
{
	int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t got = 0;
	while (got < len) {
		ssize_t n = ::read(fd, static_cast<char *>(buf) + got, len - got);
		if (n <= 0 && errno != EINTR)
			break;
		if (n > 0)
			got += static_cast<size_t>(n);
	}
	::close(fd);
	return got == len;
}

// Fills the batch from the kernel; getrandom only fails before the pool is initialised or
// where the call is missing, /dev/urandom is the fallback. Without either the process cannot
// make secret keys at all, which is fatal for isolation: abort rather than hand out guessable ones.
void refill()
{
	size_t got = 0;
	while (got < sizeof(batch.keys)) {
		ssize_t n = getrandom(reinterpret_cast<char *>(batch.keys) + got,
				      sizeof(batch.keys) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += static_cast<size_t>(n);
	}
	if (got < sizeof(batch.keys) && !fill_from_urandom(batch.keys, sizeof(batch.keys)))
		abort();
	batch.left = kBatch;
}

} // namespace

uint64_t random_key() noexcept
{
	for (;;) {
		if (!batch.left)
			refill();
		uint64_t key = batch.keys[--batch.left];
		if (key != 0 && key != FI_KEY_NOTAVAIL)
			return key;
	}
}

} // namespace util
