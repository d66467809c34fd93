// Bounded soak over tcp;ofi_rxm: two processes, each with several RDM endpoints; endpoint i of
// each process streams mixed-size messages (eager, SAR, rendezvous) to endpoint i of the
// other for SOAK_SECONDS (default 60), then an end marker carrying its send count. Every
// received message is verified byte by byte. Each process prints its counts; the run passes
// when, in both directions, sent == received == verified.
// Usage: soak [--child]   (ports 25200-25231 of this helper's range)
#include "test/badinput/fabric_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kEndpoints = 4;
constexpr int kInFlight = 8;
constexpr size_t kMaxSize = 1 << 20;
constexpr uint64_t kEndMarker = ~0ULL;
const size_t kSizes[] = {24, 4000, 16385, 70000, 300000, kMaxSize};

struct Header {
	uint64_t seq;
	uint64_t value;  // payload seed, or the send count in the end marker
	uint64_t len;    // message length, so the receiver can verify every byte
};

uint8_t byte_of(uint64_t seed, size_t i) { return static_cast<uint8_t>(seed * 17 + i * 3 + (i >> 8)); }

fi_info *info_at(int port)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	fi_info *info = nullptr;
	std::string service = std::to_string(port);
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", service.c_str(), FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	return ret ? nullptr : info;
}

struct Stream {
	harness::Side *side = nullptr;
	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	std::vector<std::vector<uint8_t>> tx = std::vector<std::vector<uint8_t>>(kInFlight),
					  rx = std::vector<std::vector<uint8_t>>(kInFlight);
	int tx_ctx[kInFlight], rx_ctx[kInFlight];
	bool tx_busy[kInFlight] = {}, rx_busy[kInFlight] = {};
	uint64_t sent = 0, received = 0, verified = 0, peer_sent = 0;
	bool end_sent = false, end_received = false;
	uint64_t send_errors = 0;
};

FILE *from_child, *to_child;

int run(bool child)
{
	int my_base = child ? 25200 : 25216, peer_base = child ? 25216 : 25200;
	int seconds = getenv("SOAK_SECONDS") ? atoi(getenv("SOAK_SECONDS")) : 60;
	std::vector<fi_info *> infos;
	std::vector<std::unique_ptr<harness::Side>> sides;
	std::vector<Stream> streams(kEndpoints);
	for (int i = 0; i < kEndpoints; i++) {
		infos.push_back(info_at(my_base + i));
		if (!infos.back())
			return 2;
		sides.push_back(std::make_unique<harness::Side>(infos.back()));
		if (!sides.back()->ok)
			return 3;
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_port = htons(static_cast<uint16_t>(peer_base + i));
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		Stream &s = streams[i];
		s.side = sides.back().get();
		if (fi_av_insert(s.side->av, &sin, 1, &s.peer, 0, nullptr) != 1)
			return 4;
		for (int k = 0; k < kInFlight; k++) {
			s.tx[k].resize(kMaxSize);
			s.rx[k].resize(kMaxSize);
		}
	}
	// Start together: the child reports ready on stdout and waits for "go" on stdin, so no
	// message goes to an endpoint that is not open yet.
	if (child) {
		printf("ready\n");
		fflush(stdout);
		char line[16];
		if (!fgets(line, sizeof(line), stdin))
			return 5;
	} else {
		char line[16];
		if (!fgets(line, sizeof(line), from_child) || fprintf(to_child, "go\n") < 0 ||
		    fflush(to_child))
			return 5;
	}
	auto stop_sending = Clock::now() + std::chrono::seconds(seconds);
	auto give_up = stop_sending + std::chrono::seconds(60);
	bool done = false;
	while (!done && Clock::now() < give_up) {
		done = true;
		for (Stream &s : streams) {
			for (int k = 0; k < kInFlight; k++) {
				if (!s.rx_busy[k] && !s.end_received &&
				    fi_recv(s.side->ep, s.rx[k].data(), kMaxSize, nullptr, FI_ADDR_UNSPEC,
					    &s.rx_ctx[k]) == 0)
					s.rx_busy[k] = true;
				if (s.tx_busy[k] || s.end_sent)
					continue;
				bool finish = Clock::now() >= stop_sending;
				if (finish) {
					bool idle = true;
					for (bool b : s.tx_busy)
						idle = idle && !b;
					if (!idle)
						continue;
				}
				size_t len = finish ? sizeof(Header) : kSizes[(s.sent * 5 + k) % 6];
				Header h{finish ? kEndMarker : s.sent, finish ? s.sent : s.sent * 7 + 1, len};
				if (!finish)
					for (size_t i = sizeof(h); i < len; i++)
						s.tx[k][i] = byte_of(h.value, i);
				memcpy(s.tx[k].data(), &h, sizeof(h));
				if (fi_send(s.side->ep, s.tx[k].data(), len, nullptr, s.peer, &s.tx_ctx[k]) == 0) {
					s.tx_busy[k] = true;
					if (finish)
						s.end_sent = true;
					else
						s.sent++;
				}
			}
			s.side->poll();
			while (!s.side->done.empty()) {
				harness::Completion c = s.side->done.front();
				s.side->done.pop_front();
				int *ctx = static_cast<int *>(c.context);
				if (ctx >= s.tx_ctx && ctx < s.tx_ctx + kInFlight) {
					s.tx_busy[ctx - s.tx_ctx] = false;
					s.send_errors += c.error;
					continue;
				}
				int k = static_cast<int>(ctx - s.rx_ctx);
				s.rx_busy[k] = false;
				if (c.error)
					continue;
				Header h;
				memcpy(&h, s.rx[k].data(), sizeof(h));
				if (h.seq == kEndMarker) {
					s.end_received = true;
					s.peer_sent = h.value;
					continue;
				}
				s.received++;
				bool good = h.len >= sizeof(h) && h.len <= kMaxSize && h.value == h.seq * 7 + 1;
				size_t bad_at = 0;
				for (size_t i = sizeof(h); good && i < h.len; i++)
					if (s.rx[k][i] != byte_of(h.value, i)) {
						good = false;
						bad_at = i;
					}
				if (!good && s.received - s.verified < 3)
					fprintf(stderr, "%s: message seq %lu len %lu corrupt at byte %zu\n",
						child ? "child" : "parent", (unsigned long)h.seq,
						(unsigned long)h.len, bad_at);
				s.verified += good;
			}
			bool tx_idle = true;
			for (bool b : s.tx_busy)
				tx_idle = tx_idle && !b;
			done = done && s.end_sent && tx_idle && s.end_received;
		}
	}
	uint64_t sent = 0, received = 0, verified = 0, peer_sent = 0, errors = 0;
	for (Stream &s : streams) {
		sent += s.sent;
		received += s.received;
		verified += s.verified;
		peer_sent += s.peer_sent;
		errors += s.send_errors;
	}
	fprintf(child ? stderr : stdout, "%s: endpoints %d, sent %lu, received %lu, verified %lu, peer reported sent %lu, "
	       "send errors %lu%s\n",
	       child ? "child " : "parent", kEndpoints, (unsigned long)sent, (unsigned long)received,
	       (unsigned long)verified, (unsigned long)peer_sent, (unsigned long)errors,
	       done ? "" : " (timed out)");
	fflush(stdout);
	sides.clear();
	for (fi_info *i : infos)
		fi_freeinfo(i);
	return done && errors == 0 && received == peer_sent && verified == received ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return run(true);
	int up[2], down[2];
	if (pipe(up) || pipe(down))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(up[1], 1);
		dup2(down[0], 0);
		close(up[0]);
		close(down[1]);
		execl("/proc/self/exe", argv[0], "--child", (char *)nullptr);
		_exit(127);
	}
	close(up[1]);
	close(down[0]);
	from_child = fdopen(up[0], "r");
	to_child = fdopen(down[1], "w");
	int ret = run(false);
	int status = 0;
	waitpid(pid, &status, 0);
	bool child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	printf("soak: %s\n", ret == 0 && child_ok ? "PASS" : "FAIL");
	return ret == 0 && child_ok ? 0 : 1;
}
