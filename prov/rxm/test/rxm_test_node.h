// The endpoint the rxm integration tests of rxm_loopback drive (rxm_loopback_test,
// rxm_conn_test, rxm_conn_lifetime_test, rxm_send_route_test, rxm_coll_test): an FI_EP_RDM
// endpoint with a fabric, domain, FI_AV_TABLE AV and CQ of its own (an EQ too when asked), so
// nothing is shared between two nodes and two threads may drive two nodes without locking.
// Each test derives its own node from RdmNode to keep what its CQ reports in the form its
// checks read; and the bounded polling loop they share. Public API only (the tests that look
// inside rxm add rxm_test_connections.h).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <vector>

namespace rxm_test {

// How a node's CQ (and EQ) is opened; the defaults are the provider's own sizes.
struct NodeOptions {
	fi_cq_format cq_format = FI_CQ_FORMAT_TAGGED;
	size_t cq_size = 0;
	fi_wait_obj wait_obj = FI_WAIT_NONE;
	size_t eq_size = 0;   // 0: no EQ
	bool bind_eq = false; // bind the EQ to the endpoint (else it is only opened)
	uint64_t cq_bind_flags = 0; // added to FI_TRANSMIT | FI_RECV, e.g. FI_SELECTIVE_COMPLETION
};

class RdmNode {
public:
	explicit RdmNode(fi_info *info, const NodeOptions &options = {})
	{
		EXPECT_EQ(0, fi_fabric(info->fabric_attr, &fabric, nullptr));
		EXPECT_EQ(0, fi_domain(fabric, info, &domain, nullptr));
		fi_av_attr av_attr{};
		av_attr.type = FI_AV_TABLE;
		EXPECT_EQ(0, fi_av_open(domain, &av_attr, &av, nullptr));
		fi_cq_attr cq_attr{};
		cq_attr.format = options.cq_format;
		cq_attr.size = options.cq_size;
		cq_attr.wait_obj = options.wait_obj;
		EXPECT_EQ(0, fi_cq_open(domain, &cq_attr, &cq, nullptr));
		if (options.eq_size) {
			fi_eq_attr eq_attr{};
			eq_attr.size = options.eq_size;
			EXPECT_EQ(0, fi_eq_open(fabric, &eq_attr, &eq, nullptr));
		}
		EXPECT_EQ(0, fi_endpoint(domain, info, &ep, nullptr));
		EXPECT_EQ(0, fi_ep_bind(ep, &av->fid, 0));
		EXPECT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | options.cq_bind_flags));
		if (eq && options.bind_eq) {
			EXPECT_EQ(0, fi_ep_bind(ep, &eq->fid, 0));
		}
		EXPECT_EQ(0, fi_enable(ep));
		name_len = sizeof(name);
		EXPECT_EQ(0, fi_getname(&ep->fid, name, &name_len));
	}
	~RdmNode()
	{
		EXPECT_EQ(0, fi_close(&ep->fid));
		if (eq) {
			EXPECT_EQ(0, fi_close(&eq->fid));
		}
		EXPECT_EQ(0, fi_close(&cq->fid));
		EXPECT_EQ(0, fi_close(&av->fid));
		EXPECT_EQ(0, fi_close(&domain->fid));
		EXPECT_EQ(0, fi_close(&fabric->fid));
	}
	RdmNode(const RdmNode &) = delete;
	RdmNode &operator=(const RdmNode &) = delete;

	fi_addr_t insert(const void *addr)
	{
		fi_addr_t out = FI_ADDR_NOTAVAIL;
		EXPECT_EQ(1, fi_av_insert(av, addr, 1, &out, 0, nullptr));
		return out;
	}
	fi_addr_t insert(const RdmNode &peer) { return insert(peer.name); }

	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_eq *eq = nullptr;
	fid_ep *ep = nullptr;
	uint8_t name[64];
	size_t name_len = 0;
};

// The node of tests that need only the contexts completed, in order, and a count of error
// completions (rxm_coalesce_test, rxm_drain_read_test).
struct ContextNode : RdmNode {
	explicit ContextNode(fi_info *info) : RdmNode(info, {.cq_format = FI_CQ_FORMAT_CONTEXT}) {}
	void poll()
	{
		fi_cq_entry e[16];
		ssize_t n = fi_cq_read(cq, e, 16);
		for (ssize_t i = 0; i < n; i++)
			done.push_back(e[i].op_context);
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(cq, &err, 0) == 1)
				failed++;
		}
	}
	std::vector<void *> done;
	int failed = 0;
};

// Calls poll() on every node until done() holds or `limit` passed; true if it held.
template <class Node>
bool poll_until(const std::vector<Node *> &nodes, const std::function<bool()> &done,
		std::chrono::milliseconds limit = std::chrono::seconds(10))
{
	auto deadline = std::chrono::steady_clock::now() + limit;
	while (std::chrono::steady_clock::now() < deadline) {
		for (Node *n : nodes)
			n->poll();
		if (done())
			return true;
	}
	return false;
}

} // namespace rxm_test
