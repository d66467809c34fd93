// The legitimate side of the accept_ and srx_ adversarial tests: a tcp;ofi_rxm RDM endpoint
// on 127.0.0.1 that either serves (posts receives and checks every message it gets) or sends
// a numbered series of messages whose bytes tell their number, so a receiver can verify
// each one's content and that none was lost or repeated.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace adversarial {

// Message i of a series: its size and the byte at each offset.
size_t series_message_size(uint32_t index);
uint8_t series_byte(uint32_t index, size_t offset);

class RdmPeer {
public:
	// source_node: the address to bind (e.g. "127.0.0.1").
	explicit RdmPeer(const char *source_node = "127.0.0.1");
	~RdmPeer();
	RdmPeer(const RdmPeer &) = delete;
	RdmPeer &operator=(const RdmPeer &) = delete;

	bool ok() const { return ok_; }
	std::string error() const { return error_; }
	// The raw address fi_getname gives (for fi_av_insert by a client).
	std::vector<char> name() const;
	// The listening port (the tcp listener rxm opens at this address).
	int port() const;

	// Client: sends messages [0, count) to `server` (its fi_getname bytes), each waited for;
	// false (with error()) if one fails or the whole series takes longer than seconds.
	bool send_series(const std::vector<char> &server, uint32_t count, int seconds);

	// Server: keeps receive buffers posted and checks what arrives. One call reads the CQ
	// once; received() counts verified messages, bad() those whose content was wrong.
	void serve_once();
	size_t received() const { return received_; }
	size_t bad() const { return bad_; }
	// A new sender starts its series at 0 again.
	void reset_series() { seen_.clear(); }
	bool got(uint32_t index) const { return index < seen_.size() && seen_[index]; }

private:
	void post_receive(size_t slot);
	void check(const void *buf, size_t len);

	fi_info *info_ = nullptr;
	fid_fabric *fabric_ = nullptr;
	fid_domain *domain_ = nullptr;
	fid_cq *cq_ = nullptr;
	fid_av *av_ = nullptr;
	fid_ep *ep_ = nullptr;
	bool ok_ = false;
	std::string error_;
	std::vector<std::vector<uint8_t>> buffers_;
	std::vector<bool> seen_;
	size_t received_ = 0;
	size_t bad_ = 0;
};

} // namespace adversarial
