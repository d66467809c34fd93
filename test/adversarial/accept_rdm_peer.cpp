#include "test/adversarial/accept_rdm_peer.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <chrono>
#include <cstring>
#include <netinet/in.h>

namespace adversarial {

namespace {
constexpr size_t kLargeMessage = 60 * 1024;
constexpr size_t kPostedReceives = 8;
} // namespace

size_t series_message_size(uint32_t index)
{
	// Small (eager) and 60 KiB messages alternate; every message holds its 4-byte number.
	return index % 2 ? kLargeMessage : 64;
}

uint8_t series_byte(uint32_t index, size_t offset)
{
	if (offset < 4)
		return uint8_t(index >> (8 * offset));
	return uint8_t(index * 131 + offset * 7 + 1);
}

RdmPeer::RdmPeer(const char *source_node)
{
	fi_info *hints = fi_allocinfo();
	if (!hints) {
		error_ = "fi_allocinfo";
		return;
	}
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	int ret = fi_getinfo(FI_VERSION(1, 17), source_node, "0", FI_SOURCE, hints, &info_);
	fi_freeinfo(hints);
	if (ret) {
		error_ = std::string("fi_getinfo: ") + fi_strerror(-ret);
		return;
	}
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.size = 256;
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	if ((ret = fi_fabric(info_->fabric_attr, &fabric_, nullptr)) ||
	    (ret = fi_domain(fabric_, info_, &domain_, nullptr)) ||
	    (ret = fi_cq_open(domain_, &cq_attr, &cq_, nullptr)) ||
	    (ret = fi_av_open(domain_, &av_attr, &av_, nullptr)) ||
	    (ret = fi_endpoint(domain_, info_, &ep_, nullptr)) ||
	    (ret = fi_ep_bind(ep_, &av_->fid, 0)) ||
	    (ret = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV)) || (ret = fi_enable(ep_))) {
		error_ = std::string("opening the endpoint: ") + fi_strerror(-ret);
		return;
	}
	ok_ = true;
}

RdmPeer::~RdmPeer()
{
	if (ep_)
		fi_close(&ep_->fid);
	if (av_)
		fi_close(&av_->fid);
	if (cq_)
		fi_close(&cq_->fid);
	if (domain_)
		fi_close(&domain_->fid);
	if (fabric_)
		fi_close(&fabric_->fid);
	fi_freeinfo(info_);
}

std::vector<char> RdmPeer::name() const
{
	std::vector<char> bytes(256);
	size_t len = bytes.size();
	if (!ep_ || fi_getname(&ep_->fid, bytes.data(), &len))
		return {};
	bytes.resize(len);
	return bytes;
}

int RdmPeer::port() const
{
	std::vector<char> bytes = name();
	if (bytes.size() < sizeof(sockaddr_in))
		return -1;
	sockaddr_in in;
	memcpy(&in, bytes.data(), sizeof(in));
	return ntohs(in.sin_port);
}

bool RdmPeer::send_series(const std::vector<char> &server, uint32_t count, int seconds)
{
	fi_addr_t dest = FI_ADDR_NOTAVAIL;
	if (fi_av_insert(av_, server.data(), 1, &dest, 0, nullptr) != 1) {
		error_ = "fi_av_insert";
		return false;
	}
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
	std::vector<uint8_t> buf(kLargeMessage);
	for (uint32_t i = 0; i < count; ++i) {
		size_t len = series_message_size(i);
		for (size_t k = 0; k < len; ++k)
			buf[k] = series_byte(i, k);
		ssize_t ret;
		while ((ret = fi_send(ep_, buf.data(), len, nullptr, dest, &buf)) == -FI_EAGAIN) {
			fi_cq_data_entry e;
			fi_cq_read(cq_, &e, 1);
			if (std::chrono::steady_clock::now() > deadline) {
				error_ = "timed out posting message " + std::to_string(i);
				return false;
			}
		}
		if (ret) {
			error_ = "fi_send: " + std::string(fi_strerror(int(-ret)));
			return false;
		}
		for (;;) {
			fi_cq_data_entry e;
			ssize_t n = fi_cq_read(cq_, &e, 1);
			if (n == 1)
				break;
			if (n == -FI_EAVAIL) {
				fi_cq_err_entry err{};
				fi_cq_readerr(cq_, &err, 0);
				error_ = "message " + std::to_string(i) +
					 " failed: " + fi_strerror(err.err);
				return false;
			}
			if (std::chrono::steady_clock::now() > deadline) {
				error_ = "timed out sending message " + std::to_string(i);
				return false;
			}
		}
	}
	return true;
}

void RdmPeer::post_receive(size_t slot)
{
	fi_recv(ep_, buffers_[slot].data(), buffers_[slot].size(), nullptr, FI_ADDR_UNSPEC,
		reinterpret_cast<void *>(slot + 1));
}

void RdmPeer::serve_once()
{
	if (!ok_)
		return;
	if (buffers_.empty()) {
		buffers_.assign(kPostedReceives, std::vector<uint8_t>(kLargeMessage));
		for (size_t slot = 0; slot < kPostedReceives; ++slot)
			post_receive(slot);
	}
	fi_cq_data_entry entries[8];
	ssize_t n = fi_cq_read(cq_, entries, 8);
	if (n == -FI_EAVAIL) {
		fi_cq_err_entry err{};
		if (fi_cq_readerr(cq_, &err, 0) == 1 && err.op_context) {
			++bad_;
			post_receive(reinterpret_cast<size_t>(err.op_context) - 1);
		}
		return;
	}
	for (ssize_t i = 0; i < n; ++i) {
		if (!(entries[i].flags & FI_RECV) || !entries[i].op_context)
			continue;
		size_t slot = reinterpret_cast<size_t>(entries[i].op_context) - 1;
		check(buffers_[slot].data(), entries[i].len);
		post_receive(slot);
	}
}

void RdmPeer::check(const void *buf, size_t len)
{
	const auto *bytes = static_cast<const uint8_t *>(buf);
	if (len < 4) {
		++bad_;
		return;
	}
	uint32_t index = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 |
			 uint32_t(bytes[3]) << 24;
	bool good = index < 1000000 && len == series_message_size(index) &&
		    !(index < seen_.size() && seen_[index]);
	for (size_t k = 0; good && k < len; ++k)
		good = bytes[k] == series_byte(index, k);
	if (!good) {
		++bad_;
		return;
	}
	if (seen_.size() <= index)
		seen_.resize(index + 1);
	seen_[index] = true;
	++received_;
}

} // namespace adversarial
