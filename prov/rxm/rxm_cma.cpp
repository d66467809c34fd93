// Cross-memory-attach helpers of the same-host rendezvous (see rxm_cma.h).
#include "prov/rxm/rxm_cma.h"

#include "prov/rxm/rxm_bytes.h"

#include <rdma/fi_errno.h>

#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>

#include <cerrno>
#include <climits>
#include <cstring>

namespace rxm {

namespace {

// The pieces of [from, from + len) of a list of (address, length) pairs, at most max of them.
template <typename Get>
size_t slice(size_t count, Get get, uint64_t from, uint64_t len, iovec *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < count && len && n < max; i++) {
		auto [base, size] = get(i);
		if (from >= size) {
			from -= size;
			continue;
		}
		uint64_t take = std::min<uint64_t>(size - from, len);
		out[n++] = {reinterpret_cast<void *>(base + from), static_cast<size_t>(take)};
		len -= take;
		from = 0;
	}
	return n;
}

std::atomic<uint32_t> self_pid{0};

void forget_pid_in_child() { self_pid.store(0, std::memory_order_relaxed); }
[[maybe_unused]] const int atfork_registered = pthread_atfork(nullptr, nullptr, forget_pid_in_child);

} // namespace

uint32_t cma_self_pid()
{
	uint32_t pid = self_pid.load(std::memory_order_relaxed);
	if (!pid) {
		pid = static_cast<uint32_t>(getpid());
		self_pid.store(pid, std::memory_order_relaxed);
	}
	return pid;
}

void encode_cma_offer(const CmaOffer &offer, uint8_t *out)
{
	put_u32(out, offer.pid);
	put_u32(out + 4, 0);
	put_u64(out + 8, offer.token_addr);
	memcpy(out + 16, offer.token, kCmaTokenSize);
	for (size_t i = 0; i < kRndvMaxSegments; i++)
		put_u64(out + 16 + kCmaTokenSize + 8 * i, offer.addr[i]);
}

int decode_cma_offer(std::span<const uint8_t> payload, CmaOffer *offer)
{
	if (payload.size() != kCmaOfferSize)
		return -FI_EIO;
	const uint8_t *p = payload.data();
	uint32_t pid = get_u32(p);
	if (pid == 0 || pid > INT_MAX || get_u32(p + 4) != 0)
		return -FI_EIO;
	offer->pid = pid;
	offer->token_addr = get_u64(p + 8);
	memcpy(offer->token, p + 16, kCmaTokenSize);
	for (size_t i = 0; i < kRndvMaxSegments; i++)
		offer->addr[i] = get_u64(p + 16 + kCmaTokenSize + 8 * i);
	return 0;
}

bool cma_make_token(uint8_t (&token)[kCmaTokenSize])
{
	ssize_t n;
	do
		n = getrandom(token, kCmaTokenSize, 0);
	while (n < 0 && errno == EINTR);
	return n == static_cast<ssize_t>(kCmaTokenSize);
}

int cma_check_peer(const CmaOffer &offer)
{
	uint8_t seen[kCmaTokenSize];
	iovec local{seen, sizeof(seen)};
	iovec remote{reinterpret_cast<void *>(static_cast<uintptr_t>(offer.token_addr)),
		     sizeof(seen)};
	ssize_t n = process_vm_readv(static_cast<pid_t>(offer.pid), &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	if (n != static_cast<ssize_t>(sizeof(seen)) || memcmp(seen, offer.token, sizeof(seen)))
		return -FI_EIO;
	return 0;
}

int cma_pull(pid_t pid, const struct iovec *local, size_t local_count, const RndvSegment *segs,
	     const uint64_t *addr, size_t seg_count, uint64_t to_read)
{
	uint64_t done = 0;
	while (done < to_read) {
		iovec l[kRndvMaxSegments], r[kRndvMaxSegments];
		auto local_piece = [&](size_t i) {
			return std::pair<uintptr_t, uint64_t>{
				reinterpret_cast<uintptr_t>(local[i].iov_base), local[i].iov_len};
		};
		auto remote_piece = [&](size_t i) {
			return std::pair<uintptr_t, uint64_t>{static_cast<uintptr_t>(addr[i]),
							      segs[i].len};
		};
		size_t nl = slice(local_count, local_piece, done, to_read - done, l, kRndvMaxSegments);
		size_t nr = slice(seg_count, remote_piece, done, to_read - done, r,
				  kRndvMaxSegments);
		if (!nl || !nr)
			return -FI_EIO; // fewer bytes described than to_read
		ssize_t n = process_vm_readv(pid, l, nl, r, nr, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -FI_EIO;
		done += static_cast<uint64_t>(n);
	}
	return 0;
}

} // namespace rxm
