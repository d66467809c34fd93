#include "test/adversarial/ident_forged_peer.h"

#include "config.h"
#include "src/registry.h"

#include <rdma/fi_errno.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>

namespace ident {

#ifdef HAVE_TCP
// The registry refers to providers weakly; naming them links them in.
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
#ifdef HAVE_RXM
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;
#endif

using Clock = std::chrono::steady_clock;

ForgedPeer::ForgedPeer(const char *src_ip)
{
	fi_info *hints = fi_allocinfo();
	if (!hints)
		return;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp");
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info_);
	fi_freeinfo(hints);
	if (ret || !info_)
		return;
	if (fi_fabric(info_->fabric_attr, &fabric_, nullptr) ||
	    fi_domain(fabric_, info_, &domain_, nullptr))
		return;
	fi_eq_attr eq_attr{};
	eq_attr.size = 16;
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.size = 64;
	if (fi_eq_open(fabric_, &eq_attr, &eq_, nullptr) ||
	    fi_cq_open(domain_, &cq_attr, &cq_, nullptr))
		return;
	// No source port: the kernel picks one, as it does for any client.
	free(info_->src_addr);
	info_->src_addr = nullptr;
	info_->src_addrlen = 0;
	if (fi_endpoint(domain_, info_, &ep_, nullptr) || fi_ep_bind(ep_, &eq_->fid, 0) ||
	    fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV))
		return;
	sockaddr_in src{};
	src.sin_family = AF_INET;
	if (inet_pton(AF_INET, src_ip, &src.sin_addr) != 1 ||
	    fi_setname(&ep_->fid, &src, sizeof(src)) || fi_enable(ep_))
		return;
	ok_ = true;
}

ForgedPeer::~ForgedPeer()
{
	if (ep_)
		fi_close(&ep_->fid);
	if (cq_)
		fi_close(&cq_->fid);
	if (eq_)
		fi_close(&eq_->fid);
	if (domain_)
		fi_close(&domain_->fid);
	if (fabric_)
		fi_close(&fabric_->fid);
	fi_freeinfo(info_);
}

void ForgedPeer::progress()
{
	fi_cq_data_entry e[8];
	ssize_t n = fi_cq_read(cq_, e, 8);
	for (ssize_t i = 0; i < n; i++) {
		if (e[i].flags & FI_SEND) {
			sends_done_++;
		} else if (e[i].flags & FI_RECV) {
			// Whatever the server says is read and dropped; the buffer goes back.
			auto *b = static_cast<std::vector<uint8_t> *>(e[i].op_context);
			fi_recv(ep_, b->data(), b->size(), nullptr, 0, b);
		}
	}
	if (n == -FI_EAVAIL) {
		fi_cq_err_entry err{};
		if (fi_cq_readerr(cq_, &err, 0) == 1 && (err.flags & FI_SEND))
			send_errors_++;
	}
	uint32_t event;
	fi_eq_cm_entry entry{};
	if (fi_eq_read(eq_, &event, &entry, sizeof(entry), 0) > 0 && event == FI_SHUTDOWN)
		shut_down_ = true;
}

ForgedPeer::Outcome ForgedPeer::connect(const std::string &target,
					const rxm::EndpointIdentity &claimed, const Pump &pump,
					int seconds, rxm::CmData *answer)
{
	rxm::CmData cm;
	cm.eager_size = 16384;
	cm.identity = claimed;
	uint8_t data[rxm::kCmMaxSize];
	size_t len = rxm::encode_cm_data(cm, data);
	if (fi_connect(ep_, target.data(), data, len))
		return Outcome::failed;
	auto deadline = Clock::now() + std::chrono::seconds(seconds);
	alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	while (Clock::now() < deadline) {
		pump();
		uint32_t event;
		ssize_t n = fi_eq_read(eq_, &event, buf, sizeof(buf), 0);
		if (n >= static_cast<ssize_t>(sizeof(fi_eq_cm_entry)) && event == FI_CONNECTED) {
			auto *e = reinterpret_cast<fi_eq_cm_entry *>(buf);
			if (answer)
				rxm::decode_cm_data({e->data, n - sizeof(fi_eq_cm_entry)}, answer);
			for (auto &b : rx_) {
				b.resize(4096);
				fi_recv(ep_, b.data(), b.size(), nullptr, 0, &b);
			}
			return Outcome::accepted;
		}
		if (n == -FI_EAVAIL) {
			uint8_t reject[256];
			fi_eq_err_entry err{};
			err.err_data = reject;
			err.err_data_size = sizeof(reject);
			if (fi_eq_readerr(eq_, &err, 0) < 0)
				return Outcome::failed;
			if (answer && err.err_data && err.err_data_size)
				rxm::decode_cm_data({static_cast<const uint8_t *>(err.err_data),
						     err.err_data_size},
						    answer);
			return err.err == FI_ECONNREFUSED ? Outcome::refused : Outcome::failed;
		}
	}
	return Outcome::timeout;
}

bool ForgedPeer::send(const std::vector<uint8_t> &bytes, const Pump &pump, int seconds)
{
	int before = sends_done_ + send_errors_;
	auto deadline = Clock::now() + std::chrono::seconds(seconds);
	ssize_t ret;
	do {
		ret = fi_send(ep_, bytes.data(), bytes.size(), nullptr, 0, nullptr);
		if (ret == -FI_EAGAIN) {
			progress();
			pump();
		}
	} while (ret == -FI_EAGAIN && Clock::now() < deadline);
	if (ret)
		return false;
	while (sends_done_ + send_errors_ == before && Clock::now() < deadline) {
		progress();
		pump();
	}
	return sends_done_ + send_errors_ > before && send_errors_ == 0;
}

std::string ForgedPeer::local_name() const
{
	return name_of(&ep_->fid);
}

rxm::EndpointIdentity identity_named(const std::string &name, uint64_t endpoint_id)
{
	rxm::EndpointIdentity id;
	id.name_len = static_cast<uint8_t>(std::min(name.size(), rxm::kCmMaxNameLen));
	memcpy(id.name, name.data(), id.name_len);
	id.endpoint_id = endpoint_id;
	return id;
}

std::string name_of(fid_t fid)
{
	char name[128];
	size_t len = sizeof(name);
	if (fi_getname(fid, name, &len) || len > sizeof(name))
		return {};
	return std::string(name, len);
}

std::string describe(const std::string &bytes)
{
	if (bytes.size() != sizeof(sockaddr_in))
		return "(not an IPv4 address)";
	sockaddr_in sa;
	memcpy(&sa, bytes.data(), sizeof(sa));
	char ip[INET_ADDRSTRLEN] = "?";
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	return std::string(ip) + ":" + std::to_string(ntohs(sa.sin_port));
}

} // namespace ident
