// rxm_cost PROVIDER msg|tagged ROUNDS [domain] [SIZE]: a single-threaded ping-pong of messages
// of SIZE bytes (64 by default)
// between two FI_EP_RDM endpoints of one process, each on its own fabric and domain (as two
// processes would be), for counting instructions per message under callgrind: no thread
// waits for another to be scheduled, so two runs with different ROUNDS differ by exactly
// the cost of the extra messages. Linked against the shared library only through the
// public API, so the same binary measures any libfabric.so.1 (LD_LIBRARY_PATH) for A/B.
// Over tcp;ofi_rxm set FI_OFI_RXM_USE_SHM=0 FI_OFI_RXM_USE_CMA=0 for the network path.
// "domain" asks FI_THREAD_DOMAIN (an application that serialises its calls, as fi_pingpong
// does) instead of leaving the threading model to the provider.
// "stream" sends instead, per round, a window of 64 messages from the first endpoint to the
// second (receives posted first) and waits for all 128 completions: the cost of a
// message of a stream (fi_bw -w 64), both sides.
// "poll" makes 100 ping-pong rounds (connections up, a tcp peer moved to shm) and then ROUNDS
// fi_cq_read calls on the first endpoint's empty CQ: the cost of a busy poller's empty
// pass. (rxm reads its core EQ by the wall clock: slowed down under callgrind, a pass reads
// it more often than at full speed.)
// "mtl" makes the ping-pong Open MPI 4.1's ofi MTL's (mtl_ofi.h): FI_THREAD_DOMAIN,
// FI_SOURCE and FI_REMOTE_CQ_DATA asked, sends by fi_tinjectdata up to the inject size
// (fi_tsenddata above, its completion read), reads by fi_cq_readfrom of up to 100 entries
// repeated until the CQ is empty (so each message found costs one more, empty, read).
// Exits non-zero when anything fails.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace {

bool mtl = false; // Open MPI's MTL's calls (see above)

struct Side {
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_ep *ep = nullptr;
	fi_addr_t peer = FI_ADDR_UNSPEC;
	long got = 0;
};

bool check(int ret, const char *what)
{
	if (ret)
		fprintf(stderr, "%s: %s\n", what, fi_strerror(-ret));
	return ret == 0;
}

bool open_side(fi_info *info, Side &s)
{
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	return check(fi_fabric(info->fabric_attr, &s.fabric, nullptr), "fi_fabric") &&
	       check(fi_domain(s.fabric, info, &s.domain, nullptr), "fi_domain") &&
	       check(fi_av_open(s.domain, &av_attr, &s.av, nullptr), "fi_av_open") &&
	       check(fi_cq_open(s.domain, &cq_attr, &s.cq, nullptr), "fi_cq_open") &&
	       check(fi_endpoint(s.domain, info, &s.ep, nullptr), "fi_endpoint") &&
	       check(fi_ep_bind(s.ep, &s.av->fid, 0), "bind av") &&
	       check(fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq") &&
	       check(fi_enable(s.ep), "fi_enable");
}

void close_side(Side &s)
{
	for (fid *f : {&s.ep->fid, &s.cq->fid, &s.av->fid, &s.domain->fid, &s.fabric->fid})
		fi_close(f);
}

bool insert(Side &from, Side &to)
{
	char name[256];
	size_t len = sizeof(name);
	return check(fi_getname(&to.ep->fid, name, &len), "fi_getname") &&
	       fi_av_insert(from.av, name, 1, &from.peer, 0, nullptr) == 1;
}

// Reads each CQ once (mtl: until it is empty).
bool poll_both(Side *sides)
{
	fi_cq_tagged_entry e[100];
	fi_addr_t src[100];
	for (int c = 0; c < 2; c++) {
		ssize_t ret;
		while ((ret = mtl ? fi_cq_readfrom(sides[c].cq, e, 100, src)
				  : fi_cq_read(sides[c].cq, e, 1)) > 0) {
			sides[c].got += ret;
			if (!mtl)
				break;
		}
		if (ret < 0 && ret != -FI_EAGAIN)
			return false;
	}
	return true;
}

// Reads both CQs (each endpoint progresses through its own) until side has count entries;
// bounded by passes, not a clock, so no system call of its own.
bool wait_for(Side *sides, int side, long count)
{
	for (long i = 0; i < 100000000 && sides[side].got < count; i++)
		if (!poll_both(sides))
			return false;
	return sides[side].got >= count;
}

} // namespace

int main(int argc, char **argv)
{
	bool domain = false;
	bool stream = false;
	bool poll = false;
	size_t size = 64;
	bool usage = argc < 4;
	for (int i = 4; i < argc && !usage; i++) {
		if (strcmp(argv[i], "domain") == 0)
			domain = true;
		else if (strcmp(argv[i], "stream") == 0)
			stream = true;
		else if (strcmp(argv[i], "poll") == 0)
			poll = true;
		else if (strcmp(argv[i], "mtl") == 0)
			mtl = domain = true;
		else if ((size = strtoul(argv[i], nullptr, 0)) == 0)
			usage = true;
	}
	if (usage) {
		fprintf(stderr, "usage: %s PROVIDER msg|tagged ROUNDS [domain|mtl] [stream|poll] [SIZE]\n",
			argv[0]);
		return 2;
	}
	bool tagged = strcmp(argv[2], "tagged") == 0;
	long rounds = atol(argv[3]);
	long polls = 0;
	if (poll) {
		polls = rounds;
		rounds = 100;
	}
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = tagged ? FI_TAGGED : FI_MSG;
	if (mtl) { // (remote CQ data as the MTL asks it: by cq_data_size)
		hints->caps |= FI_SOURCE;
		hints->domain_attr->cq_data_size = sizeof(int);
	}
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(argv[1]);
	if (domain)
		hints->domain_attr->threading = FI_THREAD_DOMAIN;
	fi_info *info = nullptr;
	if (!check(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), "getinfo"))
		return 1;
	Side s[2];
	if (!open_side(info, s[0]) || !open_side(info, s[1]) || !insert(s[0], s[1]) ||
	    !insert(s[1], s[0]))
		return 1;
	std::vector<char> out(size, 'p'), in[2] = {std::vector<char>(size), std::vector<char>(size)};
	fi_context ctx[4];
	// Sends without a completion (fi_tinjectdata): one completion per side and round.
	bool inject = mtl && size <= info->tx_attr->inject_size;
	long per_round = inject ? 1 : 2;
	auto tsend = [&](int side, void *context) {
		if (!mtl)
			return fi_tsend(s[side].ep, out.data(), size, nullptr, s[side].peer, 7, context);
		ssize_t ret; // the MTL retries -FI_EAGAIN after a progress call
		for (int i = 0; i < 1000000; i++) {
			ret = inject ? fi_tinjectdata(s[side].ep, out.data(), size, side, s[side].peer, 7)
				     : fi_tsenddata(s[side].ep, out.data(), size, nullptr, side,
						    s[side].peer, 7, context);
			if (ret != -FI_EAGAIN || !poll_both(s))
				break;
		}
		return ret;
	};
	if (stream) {
		constexpr long kWindow = 64;
		fi_context sctx[2 * kWindow];
		for (long i = 0; i < rounds; i++) {
			for (long w = 0; w < kWindow; w++) {
				ssize_t r = tagged ? fi_trecv(s[1].ep, in[1].data(), size, nullptr,
							       s[1].peer, 7, 0, &sctx[w])
						   : fi_recv(s[1].ep, in[1].data(), size, nullptr,
							      s[1].peer, &sctx[w]);
				if (r) {
					fprintf(stderr, "round %ld: recv failed\n", i);
					return 1;
				}
			}
			for (long w = 0; w < kWindow; w++) {
				ssize_t ret;
				while ((ret = tagged ? fi_tsend(s[0].ep, out.data(), size, nullptr,
								 s[0].peer, 7, &sctx[kWindow + w])
						     : fi_send(s[0].ep, out.data(), size, nullptr,
								s[0].peer, &sctx[kWindow + w])) ==
				       -FI_EAGAIN)
					if (!wait_for(s, 1, s[1].got + 1))
						break;
				if (ret) {
					fprintf(stderr, "round %ld: send failed\n", i);
					return 1;
				}
			}
			if (!wait_for(s, 0, kWindow * (i + 1)) || !wait_for(s, 1, kWindow * (i + 1))) {
				fprintf(stderr, "round %ld: completions missing\n", i);
				return 1;
			}
		}
	}
	for (long i = 0; i < rounds && !stream; i++) {
		ssize_t r0, r1, w0, w1;
		if (tagged) {
			r0 = fi_trecv(s[0].ep, in[0].data(), size, nullptr, s[0].peer, 7, 0, &ctx[0]);
			r1 = fi_trecv(s[1].ep, in[1].data(), size, nullptr, s[1].peer, 7, 0, &ctx[1]);
		} else {
			r0 = fi_recv(s[0].ep, in[0].data(), size, nullptr, s[0].peer, &ctx[0]);
			r1 = fi_recv(s[1].ep, in[1].data(), size, nullptr, s[1].peer, &ctx[1]);
		}
		w0 = tagged ? tsend(0, &ctx[2])
			    : fi_send(s[0].ep, out.data(), size, nullptr, s[0].peer, &ctx[2]);
		if (r0 || r1 || w0 || !wait_for(s, 1, per_round * i + 1)) {
			fprintf(stderr, "round %ld: first half failed (%zd %zd %zd)\n", i, r0, r1, w0);
			return 1;
		}
		w1 = tagged ? tsend(1, &ctx[3])
			    : fi_send(s[1].ep, out.data(), size, nullptr, s[1].peer, &ctx[3]);
		if (w1 || !wait_for(s, 0, per_round * (i + 1)) ||
		    !wait_for(s, 1, per_round * (i + 1))) {
			fprintf(stderr, "round %ld: second half failed\n", i);
			return 1;
		}
	}
	for (long i = 0; i < polls; i++) {
		fi_cq_tagged_entry e;
		if (fi_cq_read(s[0].cq, &e, 1) != -FI_EAGAIN) {
			fprintf(stderr, "poll %ld: the CQ was not empty\n", i);
			return 1;
		}
	}
	close_side(s[0]);
	close_side(s[1]);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("%ld rounds over %s (%s)\n", rounds, argv[1], argv[2]);
	return 0;
}
