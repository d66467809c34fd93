// Table-driven bad-input test: each row is one public fi_* call with one bad argument and
// the error the man pages document for it. A row passes when the call returns that error
// (kAnyError: the man page names no code, any negative -FI_E* is right) and nothing crashes.
//
// Not tested, because the API leaves it undefined: calls through a closed fid (the fid's
// memory is gone; libfabric's static-inline dispatch reads fid->ops before any provider
// code could check) and closing an object twice through a copied handle (same reason).
#include "test/badinput/fabric_harness.h"

#include <rdma/fi_tagged.h>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr long kAnyError = 1;  // marker: any negative return is accepted
constexpr long kSizeError = 2;  // marker: -FI_EINVAL or -FI_EMSGSIZE (man pages use both)
constexpr fi_addr_t kUnknownAddr = 4242;
using harness::kUnknownFlag;

struct Row {
	std::string what;
	long expected;
	std::function<long()> call;
};

void run_table(const std::vector<Row> &rows)
{
	for (const Row &row : rows) {
		long got = row.call();
		bool ok = row.expected == kAnyError  ? got < 0
			  : row.expected == kSizeError ? got == -FI_EINVAL || got == -FI_EMSGSIZE
						       : got == row.expected;
		if (!ok)
			ADD_FAILURE() << "row \"" << row.what << "\": expected "
				      << (row.expected == kAnyError    ? std::string("an error")
				          : row.expected == kSizeError ? std::string("a size error")
								       : std::to_string(row.expected))
				      << ", got " << got << " (" << fi_strerror(static_cast<int>(-got)) << ")";
	}
}

// fi_getinfo on tcp;ofi_rxm with hints that 'edit' changes; returns its result.
template <typename Edit> long getinfo_with(Edit edit)
{
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	edit(hints);
	fi_info *out = nullptr;
	long r = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &out);
	fi_freeinfo(hints);
	fi_freeinfo(out);
	return r;
}

TEST(BadInputCore, GetinfoFabricAndStrings)
{
	fi_info *info = harness::rdm_info(FI_MSG);
	ASSERT_NE(nullptr, info);
	std::vector<Row> rows = {
		{"fi_getinfo info=NULL", -FI_EINVAL,
		 [] { return (long)fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, nullptr); }},
		{"fi_getinfo version 2.0", -FI_ENOSYS,
		 [] {
			 fi_info *out = nullptr;
			 long r = fi_getinfo(FI_VERSION(2, 0), nullptr, nullptr, 0, nullptr, &out);
			 fi_freeinfo(out);
			 return r;
		 }},
		{"fi_getinfo unknown provider name", -FI_ENODATA,
		 [] {
			 fi_info *hints = fi_allocinfo();
			 hints->fabric_attr->prov_name = strdup("no-such-provider");
			 fi_info *out = nullptr;
			 long r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &out);
			 fi_freeinfo(hints);
			 fi_freeinfo(out);
			 return r;
		 }},
		// Enum fields holding values the API does not define (C code can store any int).
		{"fi_getinfo ep type 99", -FI_ENODATA,
		 [] { return getinfo_with([](fi_info *h) { int v = 99; memcpy(&h->ep_attr->type, &v, sizeof(v)); }); }},
		{"fi_getinfo threading -4", -FI_ENODATA,
		 [] { return getinfo_with([](fi_info *h) { int v = -4; memcpy(&h->domain_attr->threading, &v, sizeof(v)); }); }},
		{"fi_getinfo data progress 7", -FI_ENODATA,
		 [] { return getinfo_with([](fi_info *h) { int v = 7; memcpy(&h->domain_attr->data_progress, &v, sizeof(v)); }); }},
		{"fi_getinfo av type 3", -FI_ENODATA,
		 [] { return getinfo_with([](fi_info *h) { int v = 3; memcpy(&h->domain_attr->av_type, &v, sizeof(v)); }); }},
		{"fi_getinfo unresolvable node", kAnyError,
		 [] {
			 fi_info *hints = fi_allocinfo();
			 hints->fabric_attr->prov_name = strdup("tcp");
			 fi_info *out = nullptr;
			 long r = fi_getinfo(FI_VERSION(1, 17), "no.such.host.invalid", "1", 0, hints, &out);
			 fi_freeinfo(hints);
			 fi_freeinfo(out);
			 return r;
		 }},
		{"fi_fabric attr=NULL", -FI_EINVAL,
		 [] {
			 fid_fabric *f = nullptr;
			 return (long)fi_fabric(nullptr, &f, nullptr);
		 }},
		{"fi_fabric out=NULL", -FI_EINVAL,
		 [info] { return (long)fi_fabric(info->fabric_attr, nullptr, nullptr); }},
		{"fi_fabric unknown provider", kAnyError,
		 [info] {
			 fi_fabric_attr attr = *info->fabric_attr;
			 attr.prov_name = const_cast<char *>("no-such-provider");
			 fid_fabric *f = nullptr;
			 return (long)fi_fabric(&attr, &f, nullptr);
		 }},
	};
	run_table(rows);
	// Strings for values nobody defined must still be strings.
	EXPECT_NE(nullptr, fi_strerror(123456));
	EXPECT_NE(nullptr, fi_strerror(-5));
	fi_freeinfo(info);
}

class BadInputRdm : public ::testing::Test {
protected:
	void SetUp() override
	{
		info = harness::rdm_info(FI_MSG | FI_TAGGED | FI_RMA);
		ASSERT_NE(nullptr, info) << "tcp;ofi_rxm not available";
		pair = std::make_unique<harness::RdmPair>(info);
		ASSERT_TRUE(pair->ok);
	}
	void TearDown() override
	{
		pair.reset();
		fi_freeinfo(info);
	}
	fi_info *info = nullptr;
	std::unique_ptr<harness::RdmPair> pair;
};

TEST_F(BadInputRdm, DataPathCalls)
{
	fid_ep *ep = pair->a.ep;
	fi_addr_t peer = pair->b_at_a;
	static char buf[64];
	size_t too_long = info->ep_attr->max_msg_size + 1;
	size_t iov_limit = info->tx_attr->iov_limit;
	size_t inject_size = info->tx_attr->inject_size;
	size_t rx_iov_limit = info->rx_attr->iov_limit;
	std::vector<Row> rows = {
		{"fi_send len > max_msg_size", kSizeError,
		 [=] { return (long)fi_send(ep, buf, too_long, nullptr, peer, nullptr); }},
		{"fi_send unknown fi_addr", kAnyError,
		 [=] { return (long)fi_send(ep, buf, 8, nullptr, kUnknownAddr, nullptr); }},
		{"fi_send FI_ADDR_NOTAVAIL", kAnyError,
		 [=] { return (long)fi_send(ep, buf, 8, nullptr, FI_ADDR_NOTAVAIL, nullptr); }},
		{"fi_inject len > inject_size", kSizeError,
		 [=] {
			 std::vector<char> big(inject_size + 1);
			 return (long)fi_inject(ep, big.data(), big.size(), peer);
		 }},
		{"fi_inject unknown fi_addr", kAnyError,
		 [=] { return (long)fi_inject(ep, buf, 8, kUnknownAddr); }},
		{"fi_sendv count > iov_limit", -FI_EINVAL,
		 [=] {
			 std::vector<iovec> iov(iov_limit + 1, iovec{buf, 1});
			 return (long)fi_sendv(ep, iov.data(), nullptr, iov.size(), peer, nullptr);
		 }},
		{"fi_recvv count > iov_limit", -FI_EINVAL,
		 [=] {
			 std::vector<iovec> iov(rx_iov_limit + 1, iovec{buf, 1});
			 return (long)fi_recvv(ep, iov.data(), nullptr, iov.size(), FI_ADDR_UNSPEC, nullptr);
		 }},
		{"fi_sendv iov=NULL count=1", -FI_EINVAL,
		 [=] { return (long)fi_sendv(ep, nullptr, nullptr, 1, peer, nullptr); }},
		{"fi_sendmsg msg=NULL", -FI_EINVAL,
		 [=] { return (long)fi_sendmsg(ep, nullptr, 0); }},
		{"fi_tsend len > max_msg_size", kSizeError,
		 [=] { return (long)fi_tsend(ep, buf, too_long, nullptr, peer, 1, nullptr); }},
		{"fi_tsend unknown fi_addr", kAnyError,
		 [=] { return (long)fi_tsend(ep, buf, 8, nullptr, kUnknownAddr, 1, nullptr); }},
		{"fi_write unknown fi_addr", kAnyError,
		 [=] { return (long)fi_write(ep, buf, 8, nullptr, kUnknownAddr, 0, 1, nullptr); }},
		{"fi_write len > max_msg_size", kSizeError,
		 [=] { return (long)fi_write(ep, buf, too_long, nullptr, peer, 0, 1, nullptr); }},
		{"fi_read unknown fi_addr", kAnyError,
		 [=] { return (long)fi_read(ep, buf, 8, nullptr, kUnknownAddr, 0, 1, nullptr); }},
		{"fi_writev count > iov_limit", -FI_EINVAL,
		 [=] {
			 std::vector<iovec> iov(iov_limit + 1, iovec{buf, 1});
			 return (long)fi_writev(ep, iov.data(), nullptr, iov.size(), peer, 0, 1, nullptr);
		 }},
	};
	// max_msg_size may be SIZE_MAX, in which case no length exceeds it.
	if (info->ep_attr->max_msg_size == SIZE_MAX)
		std::erase_if(rows, [](const Row &r) { return r.what.find("max_msg_size") != std::string::npos; });
	run_table(rows);
}

TEST_F(BadInputRdm, ControlPathCalls)
{
	harness::Side &a = pair->a;
	static char buf[64];
	std::vector<Row> rows = {
		// fi_endpoint(3) names no code for a fid of the wrong class; any error is right.
		{"fi_ep_bind domain as a CQ", kAnyError,
		 [&] {
			 fid_ep *ep = nullptr;
			 if (fi_endpoint(a.domain, info, &ep, nullptr))
				 return -1000L;
			 long r = fi_ep_bind(ep, &a.domain->fid, FI_TRANSMIT);
			 fi_close(&ep->fid);
			 return r;
		 }},
		{"fi_ep_bind CQ unknown flag", kAnyError,
		 [&] {
			 fid_ep *ep = nullptr;
			 if (fi_endpoint(a.domain, info, &ep, nullptr))
				 return -1000L;
			 long r = fi_ep_bind(ep, &a.cq->fid, kUnknownFlag);
			 fi_close(&ep->fid);
			 return r;
		 }},
		{"fi_enable without CQ and AV", kAnyError,
		 [&] {
			 fid_ep *ep = nullptr;
			 if (fi_endpoint(a.domain, info, &ep, nullptr))
				 return -1000L;
			 long r = fi_enable(ep);
			 fi_close(&ep->fid);
			 return r;
		 }},
		{"fi_domain info=NULL", -FI_EINVAL,
		 [&] {
			 fid_domain *d = nullptr;
			 return (long)fi_domain(a.fabric, nullptr, &d, nullptr);
		 }},
		{"fi_endpoint info=NULL", -FI_EINVAL,
		 [&] {
			 fid_ep *ep = nullptr;
			 return (long)fi_endpoint(a.domain, nullptr, &ep, nullptr);
		 }},
		{"fi_cq_open attr=NULL out", -FI_EINVAL,
		 [&] {
			 fi_cq_attr attr{};
			 return (long)fi_cq_open(a.domain, &attr, nullptr, nullptr);
		 }},
		{"fi_cq_open unknown format", kAnyError,
		 [&] {
			 fi_cq_attr attr{};
			 attr.format = static_cast<fi_cq_format>(99);
			 fid_cq *cq = nullptr;
			 long r = fi_cq_open(a.domain, &attr, &cq, nullptr);
			 if (r == 0)
				 fi_close(&cq->fid);
			 return r;
		 }},
		{"fi_cq_open unknown wait object", kAnyError,
		 [&] {
			 fi_cq_attr attr{};
			 attr.wait_obj = static_cast<fi_wait_obj>(77);
			 fid_cq *cq = nullptr;
			 long r = fi_cq_open(a.domain, &attr, &cq, nullptr);
			 if (r == 0)
				 fi_close(&cq->fid);
			 return r;
		 }},
		{"fi_cq_read empty", -FI_EAGAIN,
		 [&] {
			 fi_cq_data_entry e;
			 return (long)fi_cq_read(a.cq, &e, 1);
		 }},
		{"fi_cq_readerr nothing pending", -FI_EAGAIN,
		 [&] {
			 fi_cq_err_entry e{};
			 return (long)fi_cq_readerr(a.cq, &e, 0);
		 }},
		{"fi_eq_read empty", -FI_EAGAIN,
		 [&] {
			 uint32_t ev;
			 fi_eq_cm_entry e;
			 return (long)fi_eq_read(a.eq, &ev, &e, sizeof(e), 0);
		 }},
		{"fi_eq_open attr=NULL", -FI_EINVAL,
		 [&] {
			 fid_eq *eq = nullptr;
			 return (long)fi_eq_open(a.fabric, nullptr, &eq, nullptr);
		 }},
		{"fi_av_open unknown type", kAnyError,
		 [&] {
			 fi_av_attr attr{};
			 attr.type = static_cast<fi_av_type>(9);
			 fid_av *av = nullptr;
			 long r = fi_av_open(a.domain, &attr, &av, nullptr);
			 if (r == 0)
				 fi_close(&av->fid);
			 return r;
		 }},
		{"fi_av_insert addr=NULL count=1", -FI_EINVAL,
		 [&] {
			 fi_addr_t out;
			 return (long)fi_av_insert(a.av, nullptr, 1, &out, 0, nullptr);
		 }},
		{"fi_av_insert unknown flag", -FI_EBADFLAGS,
		 [&] {
			 char name[128];
			 size_t len = sizeof(name);
			 fi_getname(&pair->b.ep->fid, name, &len);
			 fi_addr_t out;
			 return (long)fi_av_insert(a.av, name, 1, &out, kUnknownFlag, nullptr);
		 }},
		{"fi_av_lookup unknown fi_addr", kAnyError,
		 [&] {
			 char name[128];
			 size_t len = sizeof(name);
			 return (long)fi_av_lookup(a.av, kUnknownAddr, name, &len);
		 }},
		{"fi_av_remove unknown fi_addr", kAnyError,
		 [&] {
			 fi_addr_t addr = kUnknownAddr;
			 return (long)fi_av_remove(a.av, &addr, 1, 0);
		 }},
		{"fi_getname addrlen=NULL", -FI_EINVAL,
		 [&] { return (long)fi_getname(&a.ep->fid, buf, nullptr); }},
		{"fi_getname buffer too small", -FI_ETOOSMALL,
		 [&] {
			 size_t len = 1;
			 return (long)fi_getname(&a.ep->fid, buf, &len);
		 }},
		{"fi_getopt unknown option", -FI_ENOPROTOOPT,
		 [&] {
			 size_t v = 0, len = sizeof(v);
			 return (long)fi_getopt(&a.ep->fid, FI_OPT_ENDPOINT, 9999, &v, &len);
		 }},
		{"fi_getopt unknown level", -FI_ENOPROTOOPT,
		 [&] {
			 size_t v = 0, len = sizeof(v);
			 return (long)fi_getopt(&a.ep->fid, 77, FI_OPT_MIN_MULTI_RECV, &v, &len);
		 }},
		{"fi_setopt short optlen", kAnyError,
		 [&] {
			 char v = 0;
			 return (long)fi_setopt(&a.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, 1);
		 }},
		{"fi_control unknown command", kAnyError,
		 [&] { return (long)fi_control(&a.ep->fid, 4242, nullptr); }},
		{"fi_mr_reg NULL buffer", kAnyError,
		 [&] {
			 fid_mr *mr = nullptr;
			 long r = fi_mr_reg(a.domain, nullptr, 64, FI_SEND, 0, 0, 0, &mr, nullptr);
			 if (r == 0)
				 fi_close(&mr->fid);
			 return r;
		 }},
		{"fi_mr_reg unknown flag", -FI_EBADFLAGS,
		 [&] {
			 fid_mr *mr = nullptr;
			 long r = fi_mr_reg(a.domain, buf, sizeof(buf), FI_SEND, 0, 0, kUnknownFlag, &mr, nullptr);
			 if (r == 0)
				 fi_close(&mr->fid);
			 return r;
		 }},
		{"fi_mr_reg out=NULL", -FI_EINVAL,
		 [&] { return (long)fi_mr_reg(a.domain, buf, sizeof(buf), FI_SEND, 0, 0, 0, nullptr, nullptr); }},
		{"fi_mr_regv count > mr_iov_limit", kAnyError,
		 [&] {
			 std::vector<iovec> iov(info->domain_attr->mr_iov_limit + 1, iovec{buf, 1});
			 fid_mr *mr = nullptr;
			 long r = fi_mr_regv(a.domain, iov.data(), iov.size(), FI_SEND, 0, 0, 0, &mr, nullptr);
			 if (r == 0)
				 fi_close(&mr->fid);
			 return r;
		 }},
	};
	run_table(rows);
}

class BadInputMsg : public ::testing::Test {
protected:
	void SetUp() override
	{
		info = harness::msg_info(FI_MSG | FI_RMA);
		ASSERT_NE(nullptr, info) << "tcp not available";
		pair = std::make_unique<harness::MsgPair>(info);
		ASSERT_TRUE(pair->ok);
	}
	void TearDown() override
	{
		pair.reset();
		fi_freeinfo(info);
	}
	fi_info *info = nullptr;
	std::unique_ptr<harness::MsgPair> pair;
};

TEST_F(BadInputMsg, DataAndConnectionCalls)
{
	fid_ep *ep = pair->a.ep;
	harness::Side &a = pair->a;
	static char buf[64];
	size_t too_long = info->ep_attr->max_msg_size + 1;
	size_t iov_limit = info->tx_attr->iov_limit;
	size_t inject_size = info->tx_attr->inject_size;
	size_t rx_iov_limit = info->rx_attr->iov_limit;
	std::vector<Row> rows = {
		{"fi_send len > max_msg_size", kSizeError,
		 [=] { return (long)fi_send(ep, buf, too_long, nullptr, 0, nullptr); }},
		{"fi_inject len > inject_size", kSizeError,
		 [=] {
			 std::vector<char> big(inject_size + 1);
			 return (long)fi_inject(ep, big.data(), big.size(), 0);
		 }},
		{"fi_sendv count > iov_limit", -FI_EINVAL,
		 [=] {
			 std::vector<iovec> iov(iov_limit + 1, iovec{buf, 1});
			 return (long)fi_sendv(ep, iov.data(), nullptr, iov.size(), 0, nullptr);
		 }},
		{"fi_recvv count > iov_limit", -FI_EINVAL,
		 [=] {
			 std::vector<iovec> iov(rx_iov_limit + 1, iovec{buf, 1});
			 return (long)fi_recvv(ep, iov.data(), nullptr, iov.size(), 0, nullptr);
		 }},
		{"fi_sendmsg msg=NULL", -FI_EINVAL, [=] { return (long)fi_sendmsg(ep, nullptr, 0); }},
		{"fi_write len > max_msg_size", kSizeError,
		 [=] { return (long)fi_write(ep, buf, too_long, nullptr, 0, 0, 1, nullptr); }},
		// Enum fields of an application's info holding values the API does not define.
		{"fi_endpoint (tcp) ep type 99", -FI_EINVAL,
		 [&] {
			 fi_info *odd = fi_dupinfo(info);
			 int v = 99;
			 memcpy(&odd->ep_attr->type, &v, sizeof(v));
			 fid_ep *fresh = nullptr;
			 long r = fi_endpoint(a.domain, odd, &fresh, nullptr);
			 if (r == 0)
				 fi_close(&fresh->fid);
			 fi_freeinfo(odd);
			 return r;
		 }},
		{"fi_domain (tcp) ep type -3", -FI_EINVAL,
		 [&] {
			 fi_info *odd = fi_dupinfo(info);
			 int v = -3;
			 memcpy(&odd->ep_attr->type, &v, sizeof(v));
			 fid_domain *fresh = nullptr;
			 long r = fi_domain(a.fabric, odd, &fresh, nullptr);
			 if (r == 0)
				 fi_close(&fresh->fid);
			 fi_freeinfo(odd);
			 return r;
		 }},
		{"fi_getinfo (tcp) data progress 7", -FI_ENODATA,
		 [] {
			 fi_info *hints = fi_allocinfo();
			 hints->fabric_attr->prov_name = strdup("tcp");
			 int v = 7;
			 memcpy(&hints->domain_attr->data_progress, &v, sizeof(v));
			 fi_info *out = nullptr;
			 long r = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &out);
			 fi_freeinfo(hints);
			 fi_freeinfo(out);
			 return r;
		 }},
		{"fi_connect addr=NULL", kAnyError,
		 [&] {
			 fid_ep *fresh = nullptr;
			 if (fi_endpoint(a.domain, info, &fresh, nullptr))
				 return -1000L;
			 long r = fi_ep_bind(fresh, &a.eq->fid, 0);
			 if (r == 0)
				 r = fi_ep_bind(fresh, &a.cq->fid, FI_TRANSMIT | FI_RECV);
			 if (r == 0)
				 r = fi_enable(fresh);
			 if (r == 0)
				 r = fi_connect(fresh, nullptr, nullptr, 0);
			 else
				 r = -1000L;
			 fi_close(&fresh->fid);
			 return r;
		 }},
		{"fi_connect param over cm_data limit", kAnyError,
		 [&] {
			 fid_ep *fresh = nullptr;
			 if (fi_endpoint(a.domain, info, &fresh, nullptr))
				 return -1000L;
			 long r = fi_ep_bind(fresh, &a.eq->fid, 0);
			 if (r == 0)
				 r = fi_ep_bind(fresh, &a.cq->fid, FI_TRANSMIT | FI_RECV);
			 if (r == 0)
				 r = fi_enable(fresh);
			 char addr[128];
			 size_t len = sizeof(addr);
			 if (r == 0)
				 r = fi_getname(&pair->pep->fid, addr, &len);
			 std::vector<char> param(1 << 20);
			 if (r == 0)
				 r = fi_connect(fresh, addr, param.data(), param.size());
			 else
				 r = -1000L;
			 fi_close(&fresh->fid);
			 return r;
		 }},
		{"fi_accept on an endpoint that has no request", kAnyError,
		 [&] {
			 fid_ep *fresh = nullptr;
			 if (fi_endpoint(a.domain, info, &fresh, nullptr))
				 return -1000L;
			 long r = fi_ep_bind(fresh, &a.eq->fid, 0);
			 if (r == 0)
				 r = fi_ep_bind(fresh, &a.cq->fid, FI_TRANSMIT | FI_RECV);
			 if (r == 0)
				 r = fi_enable(fresh);
			 r = r == 0 ? fi_accept(fresh, nullptr, 0) : -1000L;
			 fi_close(&fresh->fid);
			 return r;
		 }},
		{"fi_pep_bind CQ instead of EQ", -FI_EINVAL,
		 [&] { return (long)fi_pep_bind(pair->pep, &a.cq->fid, 0); }},
		{"fi_reject with unknown handle", kAnyError,
		 [&] { return (long)fi_reject(pair->pep, nullptr, nullptr, 0); }},
	};
	if (info->ep_attr->max_msg_size == SIZE_MAX)
		std::erase_if(rows, [](const Row &r) { return r.what.find("max_msg_size") != std::string::npos; });
	run_table(rows);
}

}  // namespace
