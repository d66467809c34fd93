// Collectives on "tcp;ofi_rxm" (fi_collective(3)) between endpoints of one process, through the
// public API only: join with FI_JOIN_COMPLETE on each endpoint's EQ, every collective rxm
// offers with every datatype and reduction fi_query_collective reports, on the whole AV and on
// every second member, payloads that need many eager messages, and what is refused.
#include <rdma/fabric.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "src/registry.h"
#include "rxm_test_node.h"
#include "rxm_test_provider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <complex>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace {

#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
#ifdef HAVE_VERBS
fi_provider *(*volatile link_verbs)() = ofi_verbs_provider_init;
#endif
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;

// An RDM endpoint (rxm_test_node.h) with an EQ for the join events, bound unless with_eq is
// false; it keeps its AV sets and multicast groups and what its CQ and EQ reported.
struct Member : rxm_test::RdmNode {
	explicit Member(fi_info *info, bool with_eq = true)
		: RdmNode(info, {.cq_format = FI_CQ_FORMAT_TAGGED, .cq_size = 1024, .eq_size = 64,
				 .bind_eq = with_eq})
	{
	}
	~Member()
	{
		for (fid_mc *mc : mcs)
			EXPECT_EQ(0, fi_close(&mc->fid));
		for (fid_av_set *set : sets)
			EXPECT_EQ(0, fi_close(&set->fid));
	}
	// Reads the CQ (which drives progress) and the EQ, keeping what arrived.
	void poll()
	{
		fi_cq_tagged_entry e[8];
		ssize_t n = fi_cq_read(cq, e, 8);
		for (ssize_t i = 0; i < n; i++)
			completions.push_back(e[i]);
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			ASSERT_EQ(1, fi_cq_readerr(cq, &err, 0));
			if (errors_expected)
				errors.push_back(err);
			else
				ADD_FAILURE() << "collective failed: " << fi_strerror(err.err);
		}
		uint32_t event = 0;
		fi_eq_entry entry{};
		ssize_t r = fi_eq_read(eq, &event, &entry, sizeof entry, 0);
		if (r == sizeof entry && event == FI_JOIN_COMPLETE)
			joined.push_back(entry);
		else if (r != -FI_EAGAIN)
			ADD_FAILURE() << "unexpected EQ read " << r << " event " << event;
	}

	std::vector<fi_addr_t> peers;  // AV index of every member, same order everywhere
	std::vector<fid_av_set *> sets;
	std::vector<fid_mc *> mcs;
	std::vector<fi_cq_tagged_entry> completions;
	std::vector<fi_eq_entry> joined;
	bool errors_expected = false;
	std::vector<fi_cq_err_entry> errors;
};

class RxmCollective : public ::testing::Test {
protected:
	void SetUp() override
	{
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG | FI_COLLECTIVE;
		hints->fabric_attr->prov_name = strdup(rxm_test::provider());
		hints->addr_format = FI_SOCKADDR_IN;
		hints->domain_attr->mr_mode = rxm_test::mr_mode();
		int ret = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE,
				     hints, &info);
		fi_freeinfo(hints);
		if (ret == -FI_ENODATA && !rxm_test::provider_must_exist())
			GTEST_SKIP() << rxm_test::provider() << " not available";
		ASSERT_EQ(0, ret);
		ASSERT_TRUE(info->caps & FI_COLLECTIVE);
	}
	void TearDown() override
	{
		members.clear();
		if (info)
			fi_freeinfo(info);
	}
	void make_members(size_t n)
	{
		for (size_t i = 0; i < n; ++i)
			members.push_back(std::make_unique<Member>(info));
		for (auto &m : members)
			for (auto &peer : members) {
				fi_addr_t a = FI_ADDR_NOTAVAIL;
				ASSERT_EQ(1, fi_av_insert(m->av, peer->name, 1, &a, 0, nullptr));
				m->peers.push_back(a);
			}
	}
	// Polls everyone until done() or 20 s pass.
	bool run_until(const std::function<bool()> &done)
	{
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
		while (!done()) {
			if (std::chrono::steady_clock::now() > deadline)
				return false;
			for (auto &m : members)
				m->poll();
		}
		return true;
	}
	// Members 'ranks' (indices into members) join a set of exactly them; returns each one's
	// collective address (indexed like members, FI_ADDR_NOTAVAIL for non-members).
	std::vector<fi_addr_t> join(const std::vector<size_t> &ranks)
	{
		std::vector<fi_addr_t> coll(members.size(), FI_ADDR_NOTAVAIL);
		std::vector<size_t> before(members.size());
		for (size_t r : ranks) {
			Member &m = *members[r];
			before[r] = m.joined.size();
			fi_av_set_attr attr{};
			attr.count = members.size();
			attr.start_addr = FI_ADDR_NOTAVAIL;
			attr.end_addr = FI_ADDR_NOTAVAIL;
			fid_av_set *set = nullptr;
			EXPECT_EQ(0, fi_av_set(m.av, &attr, &set, nullptr));
			m.sets.push_back(set);
			for (size_t q : ranks)
				EXPECT_EQ(0, fi_av_set_insert(set, m.peers[q]));
			fi_addr_t set_addr = FI_ADDR_NOTAVAIL;
			EXPECT_EQ(0, fi_av_set_addr(set, &set_addr));
			fid_mc *mc = nullptr;
			EXPECT_EQ(0, fi_join_collective(m.ep, set_addr, set, 0, &mc, &m));
			m.mcs.push_back(mc);
			coll[r] = fi_mc_addr(mc);
		}
		EXPECT_TRUE(run_until([&] {
			for (size_t r : ranks)
				if (members[r]->joined.size() == before[r])
					return false;
			return true;
		}));
		for (size_t r : ranks) {
			Member &m = *members[r];
			if (m.joined.size() <= before[r])
				continue;
			EXPECT_EQ(m.joined[before[r]].fid, &m.mcs.back()->fid);
			EXPECT_EQ(m.joined[before[r]].context, &m);
		}
		return coll;
	}
	// Waits until each of 'ranks' has one more completion, with 'context' and
	// FI_COLLECTIVE.
	void expect_completions(const std::vector<size_t> &ranks, void *context)
	{
		EXPECT_TRUE(run_until([&] {
			for (size_t r : ranks)
				if (members[r]->completions.empty())
					return false;
			return true;
		}));
		for (size_t r : ranks) {
			Member &m = *members[r];
			if (m.completions.empty())
				continue;
			EXPECT_EQ(m.completions.front().op_context, context) << "rank " << r;
			EXPECT_TRUE(m.completions.front().flags & FI_COLLECTIVE) << "rank " << r;
			m.completions.erase(m.completions.begin());
		}
	}

	fi_info *info = nullptr;
	std::vector<std::unique_ptr<Member>> members;
};

std::vector<size_t> every(size_t n, size_t stride)
{
	std::vector<size_t> r;
	for (size_t i = 0; i < n; i += stride)
		r.push_back(i);
	return r;
}

TEST_F(RxmCollective, JoinReportsOnTheEqAndBarrierCompletes)
{
	make_members(4);
	auto all = every(4, 1);
	auto coll = join(all);
	for (size_t r : all)
		EXPECT_TRUE(coll[r] & (1ULL << 62)) << "a collective address, not an AV index";
	int ctx = 0;
	for (int round = 0; round < 3; ++round) {
		for (size_t r : all)
			ASSERT_EQ(0, fi_barrier(members[r]->ep, coll[r], &ctx));
		expect_completions(all, &ctx);
	}
}

TEST_F(RxmCollective, BarrierWaitsForEveryMember)
{
	make_members(3);
	auto all = every(3, 1);
	auto coll = join(all);
	int ctx = 0;
	ASSERT_EQ(0, fi_barrier(members[0]->ep, coll[0], &ctx));
	ASSERT_EQ(0, fi_barrier(members[1]->ep, coll[1], &ctx));
	auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
	while (std::chrono::steady_clock::now() < until)
		for (auto &m : members)
			m->poll();
	EXPECT_TRUE(members[0]->completions.empty());
	EXPECT_TRUE(members[1]->completions.empty());
	ASSERT_EQ(0, fi_barrier(members[2]->ep, coll[2], &ctx));
	expect_completions(all, &ctx);
}

TEST_F(RxmCollective, AMemberThatLeavesFailsTheCollectivesWaitingForIt)
{
	make_members(3);
	auto all = every(3, 1);
	auto coll = join(all);
	int ctx = 0;
	for (size_t r : {0, 1}) {
		members[r]->errors_expected = true;
		ASSERT_EQ(0, fi_barrier(members[r]->ep, coll[r], &ctx));
	}
	// Member 2 goes away without taking part: its connections close.
	members.pop_back();
	EXPECT_TRUE(run_until([&] {
		return members[0]->errors.size() == 1 && members[1]->errors.size() == 1;
	}));
	for (size_t r : {0, 1}) {
		ASSERT_EQ(members[r]->errors.size(), 1u);
		EXPECT_EQ(members[r]->errors[0].op_context, &ctx);
		EXPECT_EQ(members[r]->errors[0].err, FI_EIO);
		EXPECT_TRUE(members[r]->completions.empty());
		// Later collectives of the broken group fail at once.
		ASSERT_EQ(0, fi_barrier(members[r]->ep, coll[r], &ctx));
	}
	EXPECT_TRUE(run_until([&] {
		return members[0]->errors.size() == 2 && members[1]->errors.size() == 2;
	}));
}

TEST_F(RxmCollective, RefusedArguments)
{
	make_members(2);
	Member &m = *members[0];
	fi_collective_addr bogus{nullptr, 1ULL << 62};
	fid_mc *mc = nullptr;
	EXPECT_EQ(-FI_EINVAL, fi_join(m.ep, &bogus, FI_COLLECTIVE, &mc, nullptr));
	EXPECT_EQ(-FI_ENOSYS, fi_join(m.ep, &bogus, 0, &mc, nullptr)) << "no multicast";
	// A set without us.
	fi_av_set_attr attr{};
	attr.start_addr = FI_ADDR_NOTAVAIL;
	attr.end_addr = FI_ADDR_NOTAVAIL;
	fid_av_set *set = nullptr;
	ASSERT_EQ(0, fi_av_set(m.av, &attr, &set, nullptr));
	m.sets.push_back(set);
	ASSERT_EQ(0, fi_av_set_insert(set, m.peers[1]));
	fi_addr_t set_addr = 0;
	ASSERT_EQ(0, fi_av_set_addr(set, &set_addr));
	EXPECT_EQ(-FI_EINVAL, fi_join_collective(m.ep, set_addr, set, 0, &mc, nullptr));
	int x = 0;
	EXPECT_EQ(-FI_EINVAL, fi_barrier(m.ep, set_addr, nullptr)) << "not a joined group";
	EXPECT_EQ(-FI_EINVAL, fi_barrier(m.ep, m.peers[1], nullptr));

	auto coll = join(every(2, 1));
	EXPECT_EQ(-FI_ENOSYS, fi_alltoall(m.ep, &x, 1, nullptr, &x, nullptr, coll[0], FI_INT32,
					  0, nullptr));
	EXPECT_EQ(-FI_ENOSYS, fi_reduce_scatter(m.ep, &x, 1, nullptr, &x, nullptr, coll[0],
						FI_INT32, FI_SUM, 0, nullptr));
	EXPECT_EQ(-FI_ENOSYS, fi_reduce(m.ep, &x, 1, nullptr, &x, nullptr, coll[0], m.peers[0],
					FI_INT32, FI_SUM, 0, nullptr));
	EXPECT_EQ(-FI_ENOSYS, fi_gather(m.ep, &x, 1, nullptr, &x, nullptr, coll[0], m.peers[0],
					FI_INT32, 0, nullptr));
	// (fi_barrier2 without flags is fi_barrier, by the header's inline.)
	EXPECT_EQ(-FI_ENOSYS, fi_barrier2(m.ep, coll[0], FI_MORE, nullptr));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_allreduce(m.ep, &x, 1, nullptr, &x, nullptr, coll[0],
					       FI_INT32, FI_CSWAP, 0, nullptr));
	EXPECT_EQ(-FI_EINVAL, fi_broadcast(m.ep, &x, 1, nullptr, coll[0], 12345, FI_INT32, 0,
					   nullptr)) << "root not a member";
	EXPECT_EQ(-FI_EMSGSIZE, fi_broadcast(m.ep, &x, SIZE_MAX / 8, nullptr, coll[0],
					     m.peers[0], FI_INT32, 0, nullptr));
	EXPECT_TRUE(m.completions.empty());

	fi_collective_attr q{};
	q.op = FI_NOOP;
	EXPECT_EQ(0, fi_query_collective(m.domain, FI_BARRIER, &q, 0));
	q.op = FI_SUM;
	q.datatype = FI_INT32;
	EXPECT_EQ(0, fi_query_collective(m.domain, FI_ALLREDUCE, &q, 0));
	EXPECT_EQ(q.datatype_attr.size, sizeof(int32_t));
	EXPECT_GT(q.datatype_attr.count, 0u);
	q.op = FI_CSWAP;
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_query_collective(m.domain, FI_ALLREDUCE, &q, 0));
	for (fi_collective_op op : {FI_ALLTOALL, FI_REDUCE_SCATTER, FI_REDUCE, FI_GATHER})
		EXPECT_EQ(-FI_ENOSYS, fi_query_collective(m.domain, op, &q, 0));
}

TEST_F(RxmCollective, JoinNeedsAnEq)
{
	members.push_back(std::make_unique<Member>(info, false));
	Member &m = *members[0];
	fi_addr_t self = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(1, fi_av_insert(m.av, m.name, 1, &self, 0, nullptr));
	fi_av_set_attr attr{};
	attr.flags = FI_UNIVERSE;
	attr.start_addr = FI_ADDR_NOTAVAIL;
	attr.end_addr = FI_ADDR_NOTAVAIL;
	fid_av_set *set = nullptr;
	ASSERT_EQ(0, fi_av_set(m.av, &attr, &set, nullptr));
	m.sets.push_back(set);
	fi_addr_t set_addr = 0;
	ASSERT_EQ(0, fi_av_set_addr(set, &set_addr));
	fid_mc *mc = nullptr;
	EXPECT_EQ(-FI_ENOEQ, fi_join_collective(m.ep, set_addr, set, 0, &mc, nullptr));
}

// Fills element i of a buffer of 'datatype' from an integer, the same way everywhere.
void put(void *buf, size_t i, int datatype, long v)
{
	switch (datatype) {
	case FI_INT8: static_cast<int8_t *>(buf)[i] = static_cast<int8_t>(v); break;
	case FI_UINT8: static_cast<uint8_t *>(buf)[i] = static_cast<uint8_t>(v); break;
	case FI_INT16: static_cast<int16_t *>(buf)[i] = static_cast<int16_t>(v); break;
	case FI_UINT16: static_cast<uint16_t *>(buf)[i] = static_cast<uint16_t>(v); break;
	case FI_INT32: static_cast<int32_t *>(buf)[i] = static_cast<int32_t>(v); break;
	case FI_UINT32: static_cast<uint32_t *>(buf)[i] = static_cast<uint32_t>(v); break;
	case FI_INT64: static_cast<int64_t *>(buf)[i] = v; break;
	case FI_UINT64: static_cast<uint64_t *>(buf)[i] = static_cast<uint64_t>(v); break;
	case FI_FLOAT: static_cast<float *>(buf)[i] = static_cast<float>(v); break;
	case FI_DOUBLE: static_cast<double *>(buf)[i] = static_cast<double>(v); break;
	case FI_LONG_DOUBLE: static_cast<long double *>(buf)[i] = static_cast<long double>(v); break;
	case FI_FLOAT_COMPLEX:
		static_cast<std::complex<float> *>(buf)[i] = {static_cast<float>(v), 1};
		break;
	case FI_DOUBLE_COMPLEX:
		static_cast<std::complex<double> *>(buf)[i] = {static_cast<double>(v), 1};
		break;
	case FI_LONG_DOUBLE_COMPLEX:
		static_cast<std::complex<long double> *>(buf)[i] = {static_cast<long double>(v), 1};
		break;
	default: FAIL() << "datatype " << datatype;
	}
}

template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};

// fi_atomic(3)'s definition of each reduction, folded over the members' inputs in rank order
// (the inputs are small integers, so any order gives the same bits).
template <class T>
bool fold(int op, T *acc, T v)
{
	if constexpr (is_complex<T>::value) {
		switch (op) {
		case FI_SUM: *acc = *acc + v; return true;
		case FI_PROD: *acc = *acc * v; return true;
		}
		return false;
	} else {
	switch (op) {
	case FI_MIN: *acc = std::min(*acc, v); return true;
	case FI_MAX: *acc = std::max(*acc, v); return true;
	case FI_SUM: *acc = *acc + v; return true;
	case FI_PROD: *acc = *acc * v; return true;
	default: break;
	}
	switch (op) {
	case FI_LOR: *acc = *acc || v; return true;
	case FI_LAND: *acc = *acc && v; return true;
	case FI_LXOR: *acc = (*acc && !v) || (!*acc && v); return true;
	}
	if constexpr (std::is_integral_v<T>) {
		switch (op) {
		case FI_BOR: *acc = *acc | v; return true;
		case FI_BAND: *acc = *acc & v; return true;
		case FI_BXOR: *acc = *acc ^ v; return true;
		}
	}
	return false;
	}
}

template <class T>
void expect_reduced(const std::vector<std::vector<uint8_t>> &in, const uint8_t *out,
		    size_t count, int op, const char *what)
{
	for (size_t i = 0; i < count; ++i) {
		T acc;
		std::memcpy(&acc, in[0].data() + i * sizeof(T), sizeof(T));
		for (size_t q = 1; q < in.size(); ++q) {
			T v;
			std::memcpy(&v, in[q].data() + i * sizeof(T), sizeof(T));
			ASSERT_TRUE(fold(op, &acc, v));
		}
		T got;
		std::memcpy(&got, out + i * sizeof(T), sizeof(T));
		ASSERT_EQ(acc, got) << what << " element " << i;
	}
}

size_t datatype_size(int dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	case FI_INT64: case FI_UINT64: case FI_DOUBLE: case FI_FLOAT_COMPLEX: return 8;
	case FI_DOUBLE_COMPLEX: return 16;
	case FI_LONG_DOUBLE: return sizeof(long double);
	case FI_LONG_DOUBLE_COMPLEX: return 2 * sizeof(long double);
	}
	return 0;
}

void check_reduced(int dt, const std::vector<std::vector<uint8_t>> &in, const uint8_t *out,
		   size_t count, int op, const char *what)
{
	switch (dt) {
	case FI_INT8: expect_reduced<int8_t>(in, out, count, op, what); break;
	case FI_UINT8: expect_reduced<uint8_t>(in, out, count, op, what); break;
	case FI_INT16: expect_reduced<int16_t>(in, out, count, op, what); break;
	case FI_UINT16: expect_reduced<uint16_t>(in, out, count, op, what); break;
	case FI_INT32: expect_reduced<int32_t>(in, out, count, op, what); break;
	case FI_UINT32: expect_reduced<uint32_t>(in, out, count, op, what); break;
	case FI_INT64: expect_reduced<int64_t>(in, out, count, op, what); break;
	case FI_UINT64: expect_reduced<uint64_t>(in, out, count, op, what); break;
	case FI_FLOAT: expect_reduced<float>(in, out, count, op, what); break;
	case FI_DOUBLE: expect_reduced<double>(in, out, count, op, what); break;
	case FI_LONG_DOUBLE: expect_reduced<long double>(in, out, count, op, what); break;
	case FI_FLOAT_COMPLEX: expect_reduced<std::complex<float>>(in, out, count, op, what); break;
	case FI_DOUBLE_COMPLEX: expect_reduced<std::complex<double>>(in, out, count, op, what); break;
	case FI_LONG_DOUBLE_COMPLEX:
		expect_reduced<std::complex<long double>>(in, out, count, op, what);
		break;
	default: FAIL() << "datatype " << dt;
	}
}

class RxmCollectiveAll : public RxmCollective {
public:
	// Every collective rxm offers, every datatype and reduction query reports, on 'ranks'.
	void everything(const std::vector<size_t> &ranks, const std::vector<fi_addr_t> &coll)
	{
		const size_t n = ranks.size();
		constexpr size_t kCount = 5;
		int ctx = 0;
		Member &first = *members[ranks[0]];
		for (int dt = FI_INT8; dt <= FI_LONG_DOUBLE_COMPLEX; ++dt) {
			fi_collective_attr q{};
			q.datatype = static_cast<fi_datatype>(dt);
			q.op = FI_NOOP;
			if (fi_query_collective(first.domain, FI_BROADCAST, &q, 0))
				continue;
			const size_t size = datatype_size(dt);
			ASSERT_EQ(q.datatype_attr.size, size);
			SCOPED_TRACE("datatype " + std::to_string(dt));
			// broadcast from every member
			for (size_t root = 0; root < n; ++root) {
				std::vector<std::vector<uint8_t>> buf(n, std::vector<uint8_t>(kCount * size));
				std::vector<uint8_t> expect(kCount * size);
				for (size_t i = 0; i < kCount; ++i)
					put(expect.data(), i, dt, static_cast<long>(7 * root + i));
				buf[root] = expect;
				for (size_t k = 0; k < n; ++k) {
					Member &m = *members[ranks[k]];
					ASSERT_EQ(0, fi_broadcast(m.ep, buf[k].data(), kCount, nullptr,
								  coll[ranks[k]], m.peers[ranks[root]],
								  static_cast<fi_datatype>(dt), 0, &ctx));
				}
				expect_completions(ranks, &ctx);
				for (size_t k = 0; k < n; ++k)
					ASSERT_EQ(buf[k], expect) << "broadcast root " << root;
			}
			// allgather
			{
				std::vector<std::vector<uint8_t>> in(n, std::vector<uint8_t>(kCount * size)),
					out(n, std::vector<uint8_t>(n * kCount * size));
				std::vector<uint8_t> expect(n * kCount * size);
				for (size_t k = 0; k < n; ++k)
					for (size_t i = 0; i < kCount; ++i) {
						put(in[k].data(), i, dt, static_cast<long>(k * 11 + i));
						put(expect.data(), k * kCount + i, dt,
						    static_cast<long>(k * 11 + i));
					}
				for (size_t k = 0; k < n; ++k) {
					Member &m = *members[ranks[k]];
					ASSERT_EQ(0, fi_allgather(m.ep, in[k].data(), kCount, nullptr,
								  out[k].data(), nullptr, coll[ranks[k]],
								  static_cast<fi_datatype>(dt), 0, &ctx));
				}
				expect_completions(ranks, &ctx);
				for (size_t k = 0; k < n; ++k)
					ASSERT_EQ(out[k], expect) << "allgather";
			}
			// scatter from the last member
			{
				size_t root = n - 1;
				std::vector<uint8_t> src(n * kCount * size);
				for (size_t i = 0; i < n * kCount; ++i)
					put(src.data(), i, dt, static_cast<long>(i + 3));
				std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(kCount * size));
				for (size_t k = 0; k < n; ++k) {
					Member &m = *members[ranks[k]];
					ASSERT_EQ(0, fi_scatter(m.ep, k == root ? src.data() : nullptr,
								kCount, nullptr, out[k].data(), nullptr,
								coll[ranks[k]], m.peers[ranks[root]],
								static_cast<fi_datatype>(dt), 0, &ctx));
				}
				expect_completions(ranks, &ctx);
				for (size_t k = 0; k < n; ++k)
					ASSERT_EQ(0, std::memcmp(out[k].data(),
								 src.data() + k * kCount * size,
								 kCount * size)) << "scatter to " << k;
			}
			// allreduce with every reduction query reports
			for (int op = FI_MIN; op <= FI_BXOR; ++op) {
				q.op = static_cast<fi_op>(op);
				if (fi_query_collective(first.domain, FI_ALLREDUCE, &q, 0))
					continue;
				SCOPED_TRACE("op " + std::to_string(op));
				std::vector<std::vector<uint8_t>> in(n, std::vector<uint8_t>(kCount * size)),
					out(n, std::vector<uint8_t>(kCount * size));
				for (size_t k = 0; k < n; ++k)
					for (size_t i = 0; i < kCount; ++i)
						put(in[k].data(), i, dt,
						    static_cast<long>((k + 1) * (i + 1) % 5));
				for (size_t k = 0; k < n; ++k) {
					Member &m = *members[ranks[k]];
					ASSERT_EQ(0, fi_allreduce(m.ep, in[k].data(), kCount, nullptr,
								  out[k].data(), nullptr, coll[ranks[k]],
								  static_cast<fi_datatype>(dt),
								  static_cast<fi_op>(op), 0, &ctx));
				}
				expect_completions(ranks, &ctx);
				for (size_t k = 0; k < n; ++k) {
					ASSERT_EQ(out[k], out[0]) << "every member gets the same bits";
					check_reduced(dt, in, out[k].data(), kCount, op, "allreduce");
				}
			}
		}
	}
};

TEST_F(RxmCollectiveAll, EveryOpEveryDatatypeOnTheWholeAv)
{
	make_members(5);
	auto all = every(5, 1);
	everything(all, join(all));
}

TEST_F(RxmCollectiveAll, EveryOpOnEverySecondMember)
{
	make_members(5);
	auto half = every(5, 2);  // 0, 2, 4
	auto coll = join(half);
	everything(half, coll);
	// Two groups of the same members, and the whole set beside them: each its own id.
	auto again = join(half);
	auto all = join(every(5, 1));
	int ctx = 0;
	for (size_t r : half)
		ASSERT_EQ(0, fi_barrier(members[r]->ep, again[r], &ctx));
	for (size_t r = 0; r < 5; ++r)
		ASSERT_EQ(0, fi_barrier(members[r]->ep, all[r], &ctx));
	for (int i = 0; i < 2; ++i)
		expect_completions(half, &ctx);  // the barriers of both groups
	expect_completions({1, 3}, &ctx);
}

TEST_F(RxmCollective, LargePayloadsTravelInManyMessages)
{
	make_members(3);
	auto all = every(3, 1);
	auto coll = join(all);
	fi_collective_attr q{};
	q.op = FI_SUM;
	q.datatype = FI_INT64;
	ASSERT_EQ(0, fi_query_collective(members[0]->domain, FI_ALLREDUCE, &q, 0));
	const size_t count = q.datatype_attr.count;  // many eager buffers' worth
	ASSERT_GT(count * sizeof(int64_t), 256u * 1024);
	std::vector<std::vector<int64_t>> in(3, std::vector<int64_t>(count)),
		out(3, std::vector<int64_t>(count, -1));
	for (size_t k = 0; k < 3; ++k)
		for (size_t i = 0; i < count; ++i)
			in[k][i] = static_cast<int64_t>(k * 1000003 + i);
	int ctx = 0;
	for (size_t k = 0; k < 3; ++k)
		ASSERT_EQ(0, fi_allreduce(members[k]->ep, in[k].data(), count, nullptr,
					  out[k].data(), nullptr, coll[k], FI_INT64, FI_SUM, 0,
					  &ctx));
	expect_completions(all, &ctx);
	for (size_t k = 0; k < 3; ++k)
		for (size_t i = 0; i < count; ++i)
			ASSERT_EQ(out[k][i], static_cast<int64_t>(3000009 + 3 * i)) << i;
	// One element more than query allows is refused.
	EXPECT_EQ(-FI_EMSGSIZE, fi_allreduce(members[0]->ep, in[0].data(), count + 1, nullptr,
					     out[0].data(), nullptr, coll[0], FI_INT64, FI_SUM, 0,
					     &ctx));
}

} // namespace
