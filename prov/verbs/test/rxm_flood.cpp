// Flood test of rxm's credit flow control over verbs (run in the Soft-RoCE VM by run-in-vm.sh):
// two "verbs;ofi_rxm" endpoints in one process each queue kMessages sends to the other before
// either posts a receive, then one side stays idle (no progress at all, so its core receive
// buffers are not reposted, and with credits the sender stops at the last one) while the other
// keeps progressing, and finally receives are
// posted a few at a time. Run with FI_VERBS_RNR_RETRY=0: a send that reaches the peer with
// no receive posted then breaks the connection (error completions), so the test fails
// unless no send was ever posted without a credit.
//
//   rxm_flood [NODE [SIZE]]   (default 192.0.2.1, 1024 bytes)   exit 0 pass, 1 fail, 77 no
//                             verbs;ofi_rxm
// A size the core injects (e.g. 16) floods rxm's send-at-once path (send_eager_at_once), which
// takes its credits itself; a larger one (1024 on rxe) the queued path.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int kMessages = 2000;
size_t kSize = 1024; // set from the command line

struct Side {
	struct fid_av *av = nullptr;
	struct fid_cq *cq = nullptr;
	struct fid_ep *ep = nullptr;
	fi_addr_t peer = FI_ADDR_UNSPEC;
	std::vector<char> tx, rx;
	struct fid_mr *tx_mr = nullptr, *rx_mr = nullptr;
	int sent = 0, send_done = 0, posted = 0, received = 0, errors = 0;
};

bool check(int ret, const char *what)
{
	if (ret)
		std::fprintf(stderr, "rxm_flood: %s: %s\n", what, fi_strerror(-ret));
	return ret == 0;
}

// Reads completions (this is what progresses the endpoint); checks received payloads.
void poll(Side &s, const char *name)
{
	struct fi_cq_tagged_entry entries[16];
	ssize_t n = fi_cq_read(s.cq, entries, 16);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err {};
		fi_cq_readerr(s.cq, &err, 0);
		std::fprintf(stderr, "rxm_flood: %s: error completion: %s (prov_errno %d)\n", name,
			     fi_strerror(err.err), err.prov_errno);
		s.errors++;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (entries[i].flags & FI_SEND) {
			s.send_done++;
			continue;
		}
		// Receives were posted with their index as tag and context; FI_ORDER_SAS plus
		// exact tags check order and content.
		size_t index = reinterpret_cast<uintptr_t>(entries[i].op_context);
		const char *buf = s.rx.data() + (index % 64) * kSize;
		if (entries[i].len != kSize || buf[0] != static_cast<char>(index) ||
		    buf[kSize - 1] != static_cast<char>(index)) {
			std::fprintf(stderr, "rxm_flood: %s: message %zu corrupted\n", name, index);
			s.errors++;
		}
		s.received++;
	}
}

void send_some(Side &s)
{
	while (s.sent < kMessages) {
		char *buf = s.tx.data() + (s.sent % 64) * kSize;
		std::memset(buf, static_cast<char>(s.sent), kSize);
		ssize_t ret = fi_tsend(s.ep, buf, kSize, fi_mr_desc(s.tx_mr), s.peer,
				       static_cast<uint64_t>(s.sent), nullptr);
		if (ret == -FI_EAGAIN)
			return;
		if (ret) {
			check(static_cast<int>(ret), "fi_tsend");
			s.errors++;
			return;
		}
		s.sent++;
	}
}

// At most 64 receives outstanding (the receive buffer ring); a few per call.
void post_some(Side &s, int batch)
{
	for (int i = 0; i < batch && s.posted < kMessages && s.posted - s.received < 64; i++) {
		char *buf = s.rx.data() + (s.posted % 64) * kSize;
		ssize_t ret = fi_trecv(s.ep, buf, kSize, fi_mr_desc(s.rx_mr), FI_ADDR_UNSPEC,
				       static_cast<uint64_t>(s.posted), 0,
				       reinterpret_cast<void *>(static_cast<uintptr_t>(s.posted)));
		if (ret == -FI_EAGAIN)
			return;
		if (ret) {
			check(static_cast<int>(ret), "fi_trecv");
			s.errors++;
			return;
		}
		s.posted++;
	}
}

} // namespace

int main(int argc, char **argv)
{
	const char *node = argc > 1 ? argv[1] : "192.0.2.1";
	if (argc > 2)
		kSize = std::strtoul(argv[2], nullptr, 0);
	if (kSize < 1 || kSize > 4096) {
		std::fprintf(stderr, "rxm_flood: SIZE must be 1-4096\n");
		return 1;
	}
	struct fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs;ofi_rxm");
	struct fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), node, nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		std::fprintf(stderr, "rxm_flood: no verbs;ofi_rxm on %s: %s\n", node, fi_strerror(-ret));
		return 77;
	}
	struct fid_fabric *fabric = nullptr;
	struct fid_domain *domain = nullptr;
	if (!check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric") ||
	    !check(fi_domain(fabric, info, &domain, nullptr), "fi_domain"))
		return 1;
	Side sides[2];
	for (Side &s : sides) {
		struct fi_av_attr av_attr {};
		av_attr.type = FI_AV_TABLE;
		struct fi_cq_attr cq_attr {};
		cq_attr.format = FI_CQ_FORMAT_TAGGED;
		s.tx.assign(64 * kSize, 0);
		s.rx.assign(64 * kSize, 0);
		if (!check(fi_av_open(domain, &av_attr, &s.av, nullptr), "fi_av_open") ||
		    !check(fi_cq_open(domain, &cq_attr, &s.cq, nullptr), "fi_cq_open") ||
		    !check(fi_endpoint(domain, info, &s.ep, nullptr), "fi_endpoint") ||
		    !check(fi_ep_bind(s.ep, &s.av->fid, 0), "bind av") ||
		    !check(fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq") ||
		    !check(fi_enable(s.ep), "fi_enable") ||
		    !check(fi_mr_reg(domain, s.tx.data(), s.tx.size(), FI_SEND, 0, 0, 0, &s.tx_mr,
				     nullptr), "fi_mr_reg") ||
		    !check(fi_mr_reg(domain, s.rx.data(), s.rx.size(), FI_RECV, 0, 0, 0, &s.rx_mr,
				     nullptr), "fi_mr_reg"))
			return 1;
	}
	for (int i = 0; i < 2; i++) {
		char name[64];
		size_t len = sizeof(name);
		if (!check(fi_getname(&sides[1 - i].ep->fid, name, &len), "fi_getname") ||
		    fi_av_insert(sides[i].av, name, 1, &sides[i].peer, 0, nullptr) != 1)
			return 1;
	}

	using Clock = std::chrono::steady_clock;
	// Phase 0: message 0 each way with both sides progressing, so the connection is up (the
	// idle side must have accepted it) before the flood.
	auto setup_end = Clock::now() + std::chrono::seconds(60);
	while (Clock::now() < setup_end && (sides[0].received < 1 || sides[1].received < 1)) {
		for (int i = 0; i < 2; i++) {
			Side &s = sides[i];
			if (s.posted == 0)
				post_some(s, 1);
			if (s.sent == 0) {
				char *buf = s.tx.data();
				std::memset(buf, 0, kSize);
				if (fi_tsend(s.ep, buf, kSize, fi_mr_desc(s.tx_mr), s.peer, 0, nullptr) == 0)
					s.sent = 1;
			}
			poll(s, i ? "side 1" : "side 0");
		}
	}
	if (sides[0].received < 1 || sides[1].received < 1) {
		std::fprintf(stderr, "rxm_flood: the connection did not come up\n");
		return 1;
	}
	// Phase 1: both queue their whole flood; only side 0 progresses for 3 s, so side 1's
	// core buffers fill up and stay consumed.
	auto phase_end = Clock::now() + std::chrono::seconds(3);
	while (Clock::now() < phase_end) {
		send_some(sides[0]);
		send_some(sides[1]);
		poll(sides[0], "side 0");
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	std::printf("rxm_flood: after the idle phase side 0 queued %d, completed %d sends\n",
		    sides[0].sent, sides[0].send_done);
	// Phase 2: both progress; receives are posted a few at a time.
	auto deadline = Clock::now() + std::chrono::seconds(240);
	while (Clock::now() < deadline) {
		bool done = true;
		for (int i = 0; i < 2; i++) {
			Side &s = sides[i];
			send_some(s);
			post_some(s, 4);
			poll(s, i ? "side 1" : "side 0");
			done = done && s.received == kMessages && s.send_done == kMessages;
		}
		if (done || sides[0].errors || sides[1].errors)
			break;
	}
	int status = 0;
	for (int i = 0; i < 2; i++) {
		Side &s = sides[i];
		std::printf("rxm_flood: side %d sent %d (%d completed), received %d, errors %d\n", i,
			    s.sent, s.send_done, s.received, s.errors);
		if (s.errors || s.received != kMessages || s.send_done != kMessages)
			status = 1;
	}
	for (Side &s : sides) {
		fi_close(&s.ep->fid);
		fi_close(&s.tx_mr->fid);
		fi_close(&s.rx_mr->fid);
		fi_close(&s.cq->fid);
		fi_close(&s.av->fid);
	}
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	std::printf("rxm_flood: %s\n", status ? "FAIL" : "PASS");
	return status;
}
