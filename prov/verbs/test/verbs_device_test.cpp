// Tests of the verbs provider on a real RDMA device (Soft-RoCE rxe0 in the test VM, see
// prov/verbs/test/run-in-vm.sh). Without a device every test here is skipped.
// One process plays both sides; a single EQ carries every CM event so one loop drives
// the connection forward.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>
#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <infiniband/verbs.h>

#include "prov/util/flow_ctrl_ops.h"
#include "prov/util/memory_monitor.h"
#include "prov/util/mr_bind_flag.h"
#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_mr.h"
#include "test/leaks/process_usage.h"

namespace {

constexpr int kTimeoutMs = 10000;
constexpr size_t kBufferSize = 8192;

struct Event {
	uint32_t type = 0;
	fid_t fid = nullptr;
	struct fi_info *info = nullptr;
	std::string data;
	bool is_error = false;
	int err = 0;
	std::string err_data;
};

struct fi_info *verbs_hints()
{
	struct fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs");
	hints->addr_format = FI_SOCKADDR_IN;
	return hints;
}

struct fi_info *verbs_info()
{
	struct fi_info *hints = verbs_hints();
	struct fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
	fi_freeinfo(hints);
	return ret == 0 ? info : nullptr;
}

class VerbsDevice : public ::testing::Test {
protected:
	void SetUp() override
	{
		info_ = verbs_info();
		if (!info_)
			GTEST_SKIP() << "no verbs device here";
		ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
		struct fi_eq_attr eq_attr {};
		eq_attr.wait_obj = FI_WAIT_UNSPEC;
		ASSERT_EQ(fi_eq_open(fabric_, &eq_attr, &eq_, nullptr), 0);
		ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
	}

	void TearDown() override
	{
		for (struct fid_mr *mr : mrs_)
			fi_close(&mr->fid);
		close_checked(client_ ? &client_->fid : nullptr);
		close_checked(server_ ? &server_->fid : nullptr);
		close_checked(pep_ ? &pep_->fid : nullptr);
		close_checked(srx_ ? &srx_->fid : nullptr);
		for (struct fid_cq *cq : {client_tx_, client_rx_, server_tx_, server_rx_})
			close_checked(cq ? &cq->fid : nullptr);
		for (Event &e : events_)
			fi_freeinfo(e.info);
		close_checked(domain_ ? &domain_->fid : nullptr);
		close_checked(eq_ ? &eq_->fid : nullptr);
		close_checked(fabric_ ? &fabric_->fid : nullptr);
		fi_freeinfo(info_);
	}

	static void close_checked(struct fid *fid)
	{
		if (fid) {
			EXPECT_EQ(fi_close(fid), 0);
		}
	}

	struct fid_cq *open_cq(enum fi_wait_obj wait = FI_WAIT_UNSPEC)
	{
		struct fi_cq_attr attr {};
		attr.format = FI_CQ_FORMAT_DATA;
		attr.wait_obj = wait;
		struct fid_cq *cq = nullptr;
		EXPECT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), 0);
		return cq;
	}

	struct fid_ep *open_ep(struct fi_info *info, struct fid_cq *tx, struct fid_cq *rx,
			       uint64_t tx_bind_flags = FI_TRANSMIT)
	{
		struct fid_ep *ep = nullptr;
		EXPECT_EQ(fi_endpoint(domain_, info, &ep, nullptr), 0);
		if (!ep)
			return nullptr;
		EXPECT_EQ(fi_ep_bind(ep, &eq_->fid, 0), 0);
		EXPECT_EQ(fi_ep_bind(ep, &tx->fid, tx_bind_flags), 0);
		EXPECT_EQ(fi_ep_bind(ep, &rx->fid, FI_RECV), 0);
		if (srx_) {
			EXPECT_EQ(fi_ep_bind(ep, &srx_->fid, 0), 0);
		}
		EXPECT_EQ(fi_enable(ep), 0);
		return ep;
	}

	// Next CM event for fid (any fid if null) of the given type; others stay queued.
	bool wait_event(uint32_t type, fid_t fid, Event *out, bool want_error = false)
	{
		auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
		for (;;) {
			for (size_t i = 0; i < events_.size(); i++) {
				Event &e = events_[i];
				if (e.is_error == want_error && (want_error || e.type == type) &&
				    (!fid || e.fid == fid)) {
					*out = e;
					events_.erase(events_.begin() + static_cast<long>(i));
					return true;
				}
			}
			if (std::chrono::steady_clock::now() > deadline)
				return false;
			alignas(8) uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
			uint32_t type_read = 0;
			ssize_t ret = fi_eq_sread(eq_, &type_read, buf, sizeof(buf), 200, 0);
			if (ret == -FI_EAVAIL) {
				struct fi_eq_err_entry err {};
				EXPECT_EQ(fi_eq_readerr(eq_, &err, 0), (ssize_t)sizeof(err));
				Event e;
				e.is_error = true;
				e.fid = err.fid;
				e.err = err.err;
				e.err_data.assign(static_cast<char *>(err.err_data), err.err_data_size);
				events_.push_back(e);
			} else if (ret >= (ssize_t)sizeof(struct fi_eq_cm_entry)) {
				auto *entry = reinterpret_cast<struct fi_eq_cm_entry *>(buf);
				Event e;
				e.type = type_read;
				e.fid = entry->fid;
				e.info = entry->info;
				e.data.assign(reinterpret_cast<char *>(entry->data),
					      static_cast<size_t>(ret) - sizeof(*entry));
				events_.push_back(e);
			} else if (ret != -FI_EAGAIN) {
				ADD_FAILURE() << "fi_eq_sread: " << ret;
				return false;
			}
		}
	}

	void listen()
	{
		ASSERT_EQ(fi_passive_ep(fabric_, info_, &pep_, nullptr), 0);
		ASSERT_EQ(fi_pep_bind(pep_, &eq_->fid, 0), 0);
		ASSERT_EQ(fi_listen(pep_), 0);
		size_t len = sizeof(server_addr_);
		ASSERT_EQ(fi_getname(&pep_->fid, &server_addr_, &len), 0);
		ASSERT_NE(server_addr_.sin_port, 0);
	}

	// A connected pair; receives are posted on both sides before the QPs exist/connect
	// (unless they take their receives from srx_).
	void connect_pair()
	{
		listen();
		client_tx_ = open_cq();
		client_rx_ = open_cq();
		client_ = open_ep(info_, client_tx_, client_rx_, client_tx_bind_flags_);
		ASSERT_TRUE(client_);
		if (!srx_)
			post_recv(client_, client_buf_, "client-early");
		ASSERT_EQ(fi_connect(client_, &server_addr_, "hello", 5), 0);

		Event request;
		ASSERT_TRUE(wait_event(FI_CONNREQ, &pep_->fid, &request));
		EXPECT_EQ(request.data, "hello");
		ASSERT_TRUE(request.info && request.info->handle);
		server_tx_ = open_cq();
		server_rx_ = open_cq();
		server_ = open_ep(request.info, server_tx_, server_rx_);
		fi_freeinfo(request.info);
		ASSERT_TRUE(server_);
		if (!srx_)
			post_recv(server_, server_buf_, "server-early");
		ASSERT_EQ(fi_accept(server_, "world!", 6), 0);

		Event connected;
		ASSERT_TRUE(wait_event(FI_CONNECTED, &client_->fid, &connected));
		EXPECT_EQ(connected.data, "world!");
		ASSERT_TRUE(wait_event(FI_CONNECTED, &server_->fid, &connected));
	}

	struct fid_mr *reg(void *buf, size_t len, uint64_t access)
	{
		struct fid_mr *mr = nullptr;
		EXPECT_EQ(fi_mr_reg(domain_, buf, len, access, 0, 0, 0, &mr, nullptr), 0);
		if (mr)
			mrs_.push_back(mr);
		return mr;
	}

	void post_recv(struct fid_ep *ep, std::vector<char> &buf, const char *context)
	{
		buf.assign(kBufferSize, 0);
		struct fid_mr *mr = reg(buf.data(), buf.size(), FI_RECV);
		ASSERT_TRUE(mr);
		ASSERT_EQ(fi_recv(ep, buf.data(), buf.size(), fi_mr_desc(mr), 0,
				  const_cast<char *>(context)), 0);
	}

	// One completion (success or error) from cq.
	ssize_t wait_cq(struct fid_cq *cq, struct fi_cq_data_entry *entry, struct fi_cq_err_entry *err)
	{
		auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
		for (;;) {
			ssize_t ret = fi_cq_read(cq, entry, 1);
			if (ret == -FI_EAVAIL) {
				*err = {};
				return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EOTHER;
			}
			if (ret != -FI_EAGAIN || std::chrono::steady_clock::now() > deadline)
				return ret;
		}
	}

	struct fi_info *info_ = nullptr;
	struct fid_fabric *fabric_ = nullptr;
	struct fid_eq *eq_ = nullptr;
	struct fid_domain *domain_ = nullptr;
	struct fid_pep *pep_ = nullptr;
	struct fid_ep *srx_ = nullptr; // bound by open_ep when set
	struct fid_ep *client_ = nullptr, *server_ = nullptr;
	struct fid_cq *client_tx_ = nullptr, *client_rx_ = nullptr;
	struct fid_cq *server_tx_ = nullptr, *server_rx_ = nullptr;
	struct sockaddr_in server_addr_ {};
	std::vector<char> client_buf_, server_buf_;
	uint64_t client_tx_bind_flags_ = FI_TRANSMIT;
	std::vector<struct fid_mr *> mrs_;
	std::vector<Event> events_;
};

TEST_F(VerbsDevice, DiscoveryDescribesTheDevice)
{
	EXPECT_STREQ(info_->fabric_attr->prov_name, "verbs");
	EXPECT_EQ(std::string(info_->fabric_attr->name).rfind("IB-0x", 0), 0u);
	EXPECT_EQ(info_->ep_attr->protocol, (uint32_t)FI_PROTO_RDMA_CM_IB_RC);
	EXPECT_EQ(info_->addr_format, (uint32_t)FI_SOCKADDR_IN);
	EXPECT_GT(info_->tx_attr->inject_size, 0u);
	EXPECT_GT(info_->ep_attr->max_msg_size, 0u);
	ASSERT_TRUE(info_->src_addr);
	EXPECT_EQ(static_cast<struct sockaddr *>(info_->src_addr)->sa_family, AF_INET);
}

TEST_F(VerbsDevice, GetinfoResolvesNodeServiceAndSource)
{
	char node[INET_ADDRSTRLEN];
	auto *own = static_cast<struct sockaddr_in *>(info_->src_addr);
	ASSERT_TRUE(inet_ntop(AF_INET, &own->sin_addr, node, sizeof(node)));
	struct fi_info *hints = verbs_hints();
	struct fi_info *found = nullptr;

	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), node, "7000", 0, hints, &found), 0);
	ASSERT_TRUE(found->dest_addr);
	auto *dest = static_cast<struct sockaddr_in *>(found->dest_addr);
	EXPECT_EQ(ntohs(dest->sin_port), 7000);
	EXPECT_EQ(dest->sin_addr.s_addr, own->sin_addr.s_addr);
	ASSERT_TRUE(found->src_addr);
	EXPECT_EQ(static_cast<struct sockaddr_in *>(found->src_addr)->sin_addr.s_addr,
		  own->sin_addr.s_addr);
	fi_freeinfo(found);

	found = nullptr;
	ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), node, "7001", FI_SOURCE, hints, &found), 0);
	EXPECT_FALSE(found->dest_addr);
	EXPECT_EQ(ntohs(static_cast<struct sockaddr_in *>(found->src_addr)->sin_port), 7001);
	fi_freeinfo(found);

	// No route to it (TEST-NET-3; the test VM has no default route).
	found = nullptr;
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), "203.0.113.9", "7000", 0, hints, &found), -FI_ENODATA);
	// A source address no device owns.
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), "203.0.113.9", "7000", FI_SOURCE, hints, &found),
		  -FI_ENODATA);
	// A domain that does not exist.
	hints->domain_attr->name = strdup("no-such-device");
	EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &found), -FI_ENODATA);
	fi_freeinfo(hints);
}

TEST_F(VerbsDevice, ConnectAcceptAndSendRecvForms)
{
	connect_pair();
	if (HasFatalFailure())
		return;
	std::vector<char> src(kBufferSize, 'a');
	struct fid_mr *src_mr = reg(src.data(), src.size(), FI_SEND);
	void *desc = fi_mr_desc(src_mr);
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};

	// fi_send, above the inline size so the lkey path is used.
	ASSERT_EQ(fi_send(client_, src.data(), 4000, desc, 0, (void *)"send"), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	EXPECT_STREQ((char *)entry.op_context, "send");
	EXPECT_EQ(entry.flags, FI_SEND | FI_MSG);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_STREQ((char *)entry.op_context, "server-early");
	EXPECT_EQ(entry.len, 4000u);
	EXPECT_EQ(entry.flags, FI_RECV | FI_MSG);
	EXPECT_EQ(server_buf_[3999], 'a');

	// fi_sendv with two pieces lands contiguously.
	post_recv(server_, server_buf_, "rx2");
	std::memcpy(src.data(), "12345", 5);
	struct iovec iov[2] = {{src.data(), 2}, {src.data() + 2, 3}};
	void *descs[2] = {desc, desc};
	ASSERT_EQ(fi_sendv(client_, iov, descs, 2, 0, nullptr), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_EQ(entry.len, 5u);
	EXPECT_EQ(std::string(server_buf_.data(), 5), "12345");

	// fi_senddata carries 32 bits of immediate data.
	post_recv(server_, server_buf_, "rx3");
	ASSERT_EQ(fi_senddata(client_, src.data(), 8, desc, 0xabcd1234, 0, nullptr), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_EQ(entry.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(entry.data, 0xabcd1234u);

	// fi_inject: no transmit completion, the buffer is reusable at once.
	post_recv(server_, server_buf_, "rx4");
	char small[16] = "injected";
	ASSERT_EQ(fi_inject(client_, small, sizeof(small), 0), 0);
	std::memset(small, 0, sizeof(small));
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_STREQ(server_buf_.data(), "injected");
	EXPECT_EQ(fi_cq_read(client_tx_, &entry, 1), -FI_EAGAIN);

	// fi_sendmsg with FI_REMOTE_CQ_DATA from the server to the client's early receive.
	struct iovec one = {src.data(), 3};
	struct fi_msg msg {};
	msg.msg_iov = &one;
	msg.desc = &desc;
	msg.iov_count = 1;
	msg.context = (void *)"sendmsg";
	msg.data = 7;
	std::vector<char> server_src(src);
	struct fid_mr *server_mr = reg(server_src.data(), server_src.size(), FI_SEND);
	void *server_desc = fi_mr_desc(server_mr);
	msg.msg_iov = &one;
	one.iov_base = server_src.data();
	msg.desc = &server_desc;
	ASSERT_EQ(fi_sendmsg(server_, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION), 0);
	ASSERT_EQ(wait_cq(server_tx_, &entry, &err), 1);
	EXPECT_STREQ((char *)entry.op_context, "sendmsg");
	ASSERT_EQ(wait_cq(client_rx_, &entry, &err), 1);
	EXPECT_STREQ((char *)entry.op_context, "client-early");
	EXPECT_EQ(entry.data, 7u);
	EXPECT_EQ(entry.len, 3u);
}

TEST_F(VerbsDevice, RmaWriteReadWriteDataAndInject)
{
	connect_pair();
	if (HasFatalFailure())
		return;
	std::vector<char> target(kBufferSize, 0), local(kBufferSize, 'w');
	struct fid_mr *target_mr = reg(target.data(), target.size(), FI_REMOTE_READ | FI_REMOTE_WRITE);
	struct fid_mr *local_mr = reg(local.data(), local.size(), FI_WRITE | FI_READ);
	uint64_t key = fi_mr_key(target_mr);
	uint64_t addr = reinterpret_cast<uintptr_t>(target.data());
	void *desc = fi_mr_desc(local_mr);
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};

	ASSERT_EQ(fi_write(client_, local.data(), 4096, desc, 0, addr, key, (void *)"write"), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	EXPECT_EQ(entry.flags, FI_RMA | FI_WRITE);
	EXPECT_EQ(target[4095], 'w');

	target[100] = 'R';
	ASSERT_EQ(fi_read(client_, local.data(), 200, desc, 0, addr, key, (void *)"read"), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	EXPECT_EQ(entry.flags, FI_RMA | FI_READ);
	EXPECT_EQ(local[100], 'R');

	// Write with immediate data consumes the server's posted receive.
	ASSERT_EQ(fi_writedata(client_, local.data(), 64, desc, 0x55, 0, addr + 1000, key, nullptr), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_EQ(entry.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(entry.data, 0x55u);

	char small[8] = "inj";
	ASSERT_EQ(fi_inject_write(client_, small, sizeof(small), 0, addr + 2000, key), 0);
	// Ordering on the QP: a read issued after the write sees it.
	ASSERT_EQ(fi_read(client_, local.data(), 8, desc, 0, addr + 2000, key, nullptr), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	EXPECT_STREQ(local.data(), "inj");
}

TEST_F(VerbsDevice, RmaWithWrongKeyGivesErrorCompletion)
{
	connect_pair();
	if (HasFatalFailure())
		return;
	std::vector<char> target(4096, 0), local(4096, 'x');
	struct fid_mr *target_mr = reg(target.data(), target.size(), FI_REMOTE_WRITE);
	struct fid_mr *local_mr = reg(local.data(), local.size(), FI_WRITE);
	uint64_t bad_key = (fi_mr_key(target_mr) ^ 0x5a5a00) & 0xffffffff;
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};
	ASSERT_EQ(fi_write(client_, local.data(), 1024, fi_mr_desc(local_mr), 0,
			   reinterpret_cast<uintptr_t>(target.data()), bad_key, (void *)"bad"), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_EIO);
	EXPECT_STREQ((char *)err.op_context, "bad");
	EXPECT_EQ(err.flags, FI_RMA | FI_WRITE);
	EXPECT_NE(err.prov_errno, 0);
	char text[128];
	const char *why = fi_cq_strerror(client_tx_, err.prov_errno, err.err_data, text, sizeof(text));
	ASSERT_TRUE(why);
	EXPECT_GT(std::strlen(why), 0u);
	// prov_errno is the work completion's status, and the text says so.
	EXPECT_STREQ(why, ibv_wc_status_str(static_cast<enum ibv_wc_status>(err.prov_errno)));
	EXPECT_EQ(target[0], 0);
}

// The RDMA netdev behind the device (e.g. dummy0 for rxe0), from sysfs; empty if unknown.
std::string device_netdev(const char *device)
{
	std::string path = std::string("/sys/class/infiniband/") + device + "/ports/1/gid_attrs/ndevs/0";
	FILE *f = fopen(path.c_str(), "r");
	if (!f)
		return "";
	char name[64] = "";
	if (!fgets(name, sizeof(name), f))
		name[0] = 0;
	fclose(f);
	std::string netdev(name);
	while (!netdev.empty() && (netdev.back() == '\n' || netdev.back() == ' '))
		netdev.pop_back();
	return netdev;
}

bool port_active(const char *device)
{
	std::string path = std::string("/sys/class/infiniband/") + device + "/ports/1/state";
	FILE *f = fopen(path.c_str(), "r");
	if (!f)
		return false;
	char state[64] = "";
	bool active = fgets(state, sizeof(state), f) && strstr(state, "ACTIVE");
	fclose(f);
	return active;
}

// A connection cut under traffic (issue 8: "in the VM, rxe's netdev taken down"): every send
// posted after the link went down completes, in error, within a bound, instead of hanging.
// It takes the device's netdev down, so it only runs when VERBS_CUT_LINK=1 (the test VM sets
// it; never on a machine whose RDMA link matters).
TEST_F(VerbsDevice, LinkDownUnderTrafficGivesErrorCompletions)
{
	const char *allowed = getenv("VERBS_CUT_LINK");
	if (!allowed || strcmp(allowed, "1") != 0)
		GTEST_SKIP() << "takes the RDMA netdev down: set VERBS_CUT_LINK=1 (test VM only)";
	const char *device = info_->domain_attr->name;
	std::string netdev = device_netdev(device);
	ASSERT_FALSE(netdev.empty()) << "no netdev for " << device;
	connect_pair();
	if (HasFatalFailure())
		return;
	std::vector<char> payload(4096, 'c');
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};
	// Traffic flows first.
	ASSERT_EQ(fi_send(client_, payload.data(), 64, nullptr, 0, (void *)"before"), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);

	ASSERT_EQ(system(("ip link set dev " + netdev + " down").c_str()), 0);
	constexpr int kSends = 8;
	int posted = 0;
	for (int i = 0; i < kSends; i++)
		if (fi_send(client_, payload.data(), 64, nullptr, 0, (void *)"after") == 0)
			posted++;
	int ok = 0, errors = 0, eio = 0;
	auto start = std::chrono::steady_clock::now();
	auto deadline = start + std::chrono::seconds(120);   // retries exhaust in seconds
	while (ok + errors < posted && std::chrono::steady_clock::now() < deadline) {
		ssize_t ret = fi_cq_read(client_tx_, &entry, 1);
		if (ret == 1) {
			ok++;
		} else if (ret == -FI_EAVAIL) {
			err = {};
			ASSERT_EQ(fi_cq_readerr(client_tx_, &err, 0), 1);
			errors++;
			if (err.err == FI_EIO)
				eio++;
		} else {
			ASSERT_EQ(ret, -FI_EAGAIN);
			usleep(1000);
		}
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	printf("link %s down: %d sends posted, %d completed, %d in error (%d FI_EIO) in %.1f s\n",
	       netdev.c_str(), posted, ok, errors, eio, secs);
	// Bring the link back before judging, so later tests find the port active.
	EXPECT_EQ(system(("ip link set dev " + netdev + " up").c_str()), 0);
	for (int i = 0; i < 300 && !port_active(device); i++)
		usleep(100 * 1000);
	EXPECT_TRUE(port_active(device)) << device << " did not come back";
	EXPECT_EQ(ok + errors, posted) << "sends neither completed nor failed within 120 s";
	EXPECT_GE(errors, 1) << "no send failed although the link was down";
	EXPECT_GE(eio, 1);
}

TEST_F(VerbsDevice, RejectReachesTheClientWithItsData)
{
	listen();
	client_tx_ = open_cq();
	client_rx_ = open_cq();
	client_ = open_ep(info_, client_tx_, client_rx_);
	ASSERT_EQ(fi_connect(client_, &server_addr_, nullptr, 0), 0);
	Event request;
	ASSERT_TRUE(wait_event(FI_CONNREQ, &pep_->fid, &request));
	ASSERT_EQ(fi_reject(pep_, request.info->handle, "nope", 4), 0);
	fi_freeinfo(request.info);
	Event failure;
	ASSERT_TRUE(wait_event(0, &client_->fid, &failure, true));
	EXPECT_EQ(failure.err, FI_ECONNREFUSED);
	EXPECT_EQ(failure.err_data, "nope");
}

TEST_F(VerbsDevice, ConnectToNobodyIsRefused)
{
	listen(); // only to learn a port; then connect to a port nobody listens on
	client_tx_ = open_cq();
	client_rx_ = open_cq();
	client_ = open_ep(info_, client_tx_, client_rx_);
	struct sockaddr_in nobody = server_addr_;
	nobody.sin_port = htons(static_cast<uint16_t>(ntohs(server_addr_.sin_port) + 1));
	ASSERT_EQ(fi_connect(client_, &nobody, nullptr, 0), 0);
	Event failure;
	ASSERT_TRUE(wait_event(0, &client_->fid, &failure, true));
	EXPECT_TRUE(failure.err == FI_ECONNREFUSED || failure.err == FI_EHOSTUNREACH) << failure.err;
}

TEST_F(VerbsDevice, TrywaitArmsTheCqFd)
{
	connect_pair();
	if (HasFatalFailure())
		return;
	int fd = -1;
	ASSERT_EQ(fi_control(&client_tx_->fid, FI_GETWAIT, &fd), 0);
	struct fid *fids[1] = {&client_tx_->fid};
	ASSERT_EQ(fi_trywait(fabric_, fids, 1), 0);
	struct pollfd pfd = {fd, POLLIN, 0};
	EXPECT_EQ(poll(&pfd, 1, 0), 0);
	char small[8] = "x";
	ASSERT_EQ(fi_send(client_, small, sizeof(small), nullptr, 0, (void *)"armed"), 0);
	EXPECT_EQ(poll(&pfd, 1, kTimeoutMs), 1);
	struct fi_cq_data_entry entry {};
	ASSERT_EQ(fi_cq_sread(client_tx_, &entry, 1, nullptr, kTimeoutMs), 1);
	EXPECT_STREQ((char *)entry.op_context, "armed");
	// Nothing left: sread times out with -FI_EAGAIN.
	EXPECT_EQ(fi_cq_sread(client_tx_, &entry, 1, nullptr, 50), -FI_EAGAIN);
}

// A reader asleep in fi_cq_sread before anything was sent wakes for the completion: the CQ
// must be armed before the reader sleeps, or the completion channel never fires.
TEST_F(VerbsDevice, SreadSleepingBeforeTheSendWakesForIt)
{
	connect_pair();
	if (HasFatalFailure())
		return;
	struct fi_cq_data_entry entry {};
	ssize_t got = 0;
	auto started = std::chrono::steady_clock::now();
	std::thread reader([&] { got = fi_cq_sread(server_rx_, &entry, 1, nullptr, kTimeoutMs); });
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	char small[8] = "wake";
	ASSERT_EQ(fi_send(client_, small, sizeof(small), nullptr, 0, nullptr), 0);
	reader.join();
	EXPECT_EQ(got, 1);
	EXPECT_STREQ((char *)entry.op_context, "server-early");
	EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(kTimeoutMs));
	// fi_cq_signal ends a sleeping read early with -FI_EAGAIN.
	std::thread waker([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		EXPECT_EQ(fi_cq_signal(server_rx_), 0);
	});
	EXPECT_EQ(fi_cq_sread(server_rx_, &entry, 1, nullptr, kTimeoutMs), -FI_EAGAIN);
	waker.join();
}

// What verbs does not offer is refused with -FI_ENOSYS, whatever util's objects could do.
TEST_F(VerbsDevice, RefusesWhatItDoesNotOffer)
{
	struct fi_cntr_attr cntr_attr {};
	struct fid_cntr *cntr = nullptr;
	EXPECT_EQ(fi_cntr_open(domain_, &cntr_attr, &cntr, nullptr), -FI_ENOSYS);
	struct fi_av_attr av_attr {};
	av_attr.type = FI_AV_MAP;
	struct fid_av *av = nullptr;
	EXPECT_EQ(fi_av_open(domain_, &av_attr, &av, nullptr), -FI_ENOSYS);
	struct fi_poll_attr poll_attr {};
	struct fid_poll *pollset = nullptr;
	EXPECT_EQ(fi_poll_open(domain_, &poll_attr, &pollset), -FI_ENOSYS);
	EXPECT_EQ(fi_domain_bind(domain_, &eq_->fid, 0), -FI_ENOSYS);
	struct fi_wait_attr wait_attr {};
	wait_attr.wait_obj = FI_WAIT_FD;
	struct fid_wait *waitset = nullptr;
	EXPECT_EQ(fi_wait_open(fabric_, &wait_attr, &waitset), -FI_ENOSYS);
	struct fid_cq *cq = nullptr;
	for (enum fi_wait_obj wait : {FI_WAIT_SET, FI_WAIT_YIELD, FI_WAIT_MUTEX_COND}) {
		struct fi_cq_attr attr {};
		attr.wait_obj = wait;
		EXPECT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), -FI_ENOSYS) << wait;
	}
	struct fi_cq_attr threshold {};
	threshold.wait_obj = FI_WAIT_FD;
	threshold.wait_cond = FI_CQ_COND_THRESHOLD;
	EXPECT_EQ(fi_cq_open(domain_, &threshold, &cq, nullptr), -FI_ENOSYS);
	struct fi_cq_attr bad_flags {};
	bad_flags.flags = FI_PEEK;
	EXPECT_EQ(fi_cq_open(domain_, &bad_flags, &cq, nullptr), -FI_EBADFLAGS);
	struct fi_cq_attr bad_format {};
	bad_format.format = static_cast<enum fi_cq_format>(77);
	EXPECT_EQ(fi_cq_open(domain_, &bad_format, &cq, nullptr), -FI_EINVAL);
}

// Binding, enabling, op flags and options follow util::Endpoint's rules (fi_endpoint(3)),
// as tcp's and rxm's endpoints do; what verbs has not (counters, AVs, memory binding) is
// refused with -FI_ENOSYS.
TEST_F(VerbsDevice, EndpointBindsEnablesAndTakesOptionsAsUtilDoes)
{
	client_tx_ = open_cq();
	struct fid_ep *ep = nullptr;
	ASSERT_EQ(fi_endpoint(domain_, info_, &ep, nullptr), 0);
	EXPECT_EQ(fi_ep_bind(ep, nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_enable(ep), -FI_ENOCQ); // nowhere for completions to go
	EXPECT_EQ(fi_ep_bind(ep, &client_tx_->fid, 0), -FI_EBADFLAGS);
	EXPECT_EQ(fi_ep_bind(ep, &client_tx_->fid, FI_TRANSMIT | FI_REMOTE_READ), -FI_EBADFLAGS);
	EXPECT_EQ(fi_ep_bind(ep, &client_tx_->fid, FI_TRANSMIT), 0);
	EXPECT_EQ(fi_ep_bind(ep, &client_tx_->fid, FI_TRANSMIT), -FI_EALREADY);
	EXPECT_EQ(fi_ep_bind(ep, &eq_->fid, FI_TRANSMIT), -FI_EBADFLAGS);
	EXPECT_EQ(fi_ep_bind(ep, &eq_->fid, 0), 0);
	EXPECT_EQ(fi_ep_bind(ep, &eq_->fid, 0), -FI_EALREADY);
	// A CQ of another domain cannot take this endpoint's completions.
	struct fid_domain *other_domain = nullptr;
	ASSERT_EQ(fi_domain(fabric_, info_, &other_domain, nullptr), 0);
	struct fi_cq_attr cq_attr {};
	struct fid_cq *foreign_cq = nullptr;
	ASSERT_EQ(fi_cq_open(other_domain, &cq_attr, &foreign_cq, nullptr), 0);
	EXPECT_EQ(fi_ep_bind(ep, &foreign_cq->fid, FI_RECV), -FI_EINVAL);
	// Verbs counts nothing and has no AV: other objects are refused as unsupported.
	char buf[64];
	struct fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(domain_, buf, sizeof(buf), FI_SEND, 0, 0, 0, &mr, nullptr), 0);
	EXPECT_EQ(fi_ep_bind(ep, &mr->fid, 0), -FI_ENOSYS);
	EXPECT_EQ(fi_ep_bind(ep, &mr->fid, FI_SEND), -FI_ENOSYS);

	uint64_t flags = FI_TRANSMIT | FI_RECV;
	EXPECT_EQ(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), -FI_EINVAL);
	EXPECT_EQ(fi_control(&ep->fid, FI_GETOPSFLAG, nullptr), -FI_EINVAL);
	flags = FI_TRANSMIT | FI_COMPLETION | FI_FENCE;
	EXPECT_EQ(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_TRANSMIT;
	EXPECT_EQ(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), 0);
	EXPECT_EQ(flags, FI_TRANSMIT | FI_COMPLETION | FI_FENCE);
	flags = FI_RECV | FI_COMPLETION;
	EXPECT_EQ(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_RECV;
	EXPECT_EQ(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), 0);
	EXPECT_EQ(flags, FI_RECV | FI_COMPLETION);
	EXPECT_EQ(fi_control(&ep->fid, FI_BACKLOG, &flags), -FI_ENOSYS);

	size_t size = 0, len = sizeof(size);
	EXPECT_EQ(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &len), 0);
	EXPECT_EQ(size, 52u); // 56 bytes of rdma_cm private data less our 4-byte header
	len = 1;
	EXPECT_EQ(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &len),
		  -FI_ETOOSMALL);
	len = sizeof(size);
	EXPECT_EQ(fi_getopt(&ep->fid, FI_OPT_ENDPOINT + 1, FI_OPT_CM_DATA_SIZE, &size, &len),
		  -FI_ENOPROTOOPT);
	// No multi-receive buffers in verbs, so no threshold for them either.
	EXPECT_EQ(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &size, &len),
		  -FI_ENOPROTOOPT);
	EXPECT_EQ(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &size, sizeof(size)),
		  -FI_ENOPROTOOPT);
	EXPECT_EQ(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, sizeof(size)),
		  -FI_ENOPROTOOPT);

	EXPECT_EQ(fi_enable(ep), 0);
	EXPECT_EQ(fi_enable(ep), 0);
	client_rx_ = open_cq();
	EXPECT_EQ(fi_ep_bind(ep, &client_rx_->fid, FI_RECV), -FI_EOPBADSTATE);
	EXPECT_EQ(fi_close(&client_tx_->fid), -FI_EBUSY); // bound to the endpoint
	EXPECT_EQ(fi_close(&eq_->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&mr->fid), 0);
	EXPECT_EQ(fi_close(&foreign_cq->fid), 0);
	EXPECT_EQ(fi_close(&other_domain->fid), 0);
}

// Local-access regions come from the domain's MR cache (the same device registration, so
// the same key, for the same pages); remote-access ones are made per region; an unmap of
// the pages drops the cached one.
TEST_F(VerbsDevice, LocalRegionsAreCachedRemoteOnesAreNot)
{
	const char *monitor = getenv("FI_MR_CACHE_MONITOR");
	if (!util::MemoryMonitor::available() || (monitor && !strcmp(monitor, "disabled")))
		GTEST_SKIP() << "no userfaultfd or FI_MR_CACHE_MONITOR=disabled: nothing is cached";
	const size_t len = 64 * 1024;
	void *buf = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(buf, MAP_FAILED);
	memset(buf, 1, len);
	// Compared by the device's local key (rxe gives local-only regions remote key 0),
	// with the regions compared open at once (a closed one's key may come back).
	auto reg = [&](uint64_t access) {
		struct fid_mr *mr = nullptr;
		EXPECT_EQ(fi_mr_reg(domain_, buf, len, access, 0, 0, 0, &mr, nullptr), 0);
		return mr;
	};
	auto lkey = [](struct fid_mr *mr) {
		return mr ? verbs::VerbsMemoryRegion::from_desc(fi_mr_desc(mr))->lkey() : 0u;
	};
	struct fid_mr *local1 = reg(FI_READ), *local2 = reg(FI_READ);
	EXPECT_EQ(lkey(local1), lkey(local2));
	struct fid_mr *remote1 = reg(FI_REMOTE_READ), *remote2 = reg(FI_REMOTE_READ);
	EXPECT_NE(lkey(remote1), lkey(remote2));
	EXPECT_NE(lkey(remote1), lkey(local1));
	ASSERT_EQ(munmap(buf, len), 0);
	void *again = mmap(buf, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			   -1, 0);
	ASSERT_EQ(again, buf);
	struct fid_mr *local3 = reg(FI_READ);
	EXPECT_NE(lkey(local3), lkey(local1));
	for (struct fid_mr *mr : {local1, local2, remote1, remote2, local3}) {
		if (mr) {
			EXPECT_EQ(fi_close(&mr->fid), 0);
		}
	}
	munmap(buf, len);
}

// Rendezvous sources as memory windows (OFI_MR_BIND_TO_EP, verbs_mr.h): the key reaches the
// source only over the QP it was bound on, only once enabled, and never after fi_close.
class VerbsWindow : public VerbsDevice {
protected:
	void SetUp() override
	{
		VerbsDevice::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		const char *monitor = getenv("FI_MR_CACHE_MONITOR");
		if (!util::MemoryMonitor::available() || (monitor && !strcmp(monitor, "disabled")))
			GTEST_SKIP() << "no MR cache: no windows";
		connect_pair();
		if (HasFatalFailure())
			return;
		source_ = static_cast<char *>(mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
						   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		ASSERT_NE(source_, MAP_FAILED);
		memset(source_, 's', kLen);
		local_.assign(kLen, 0);
		local_mr_ = reg(local_.data(), local_.size(), FI_READ);
		ASSERT_EQ(fi_mr_reg(domain_, source_, kLen, FI_REMOTE_READ, 0, 0, OFI_MR_BIND_TO_EP,
				    &window_, nullptr), 0);
		auto *region = verbs::VerbsMemoryRegion::from_desc(fi_mr_desc(window_));
		ASSERT_TRUE(region);
		if (!region->is_window())
			GTEST_SKIP() << "the device has no type-2 memory windows (or FI_VERBS_USE_MW=0)";
	}

	void TearDown() override
	{
		if (window_)
			fi_close(&window_->fid);
		if (source_ && source_ != MAP_FAILED)
			munmap(source_, kLen);
		VerbsDevice::TearDown();
	}

	// reader's read of the source through the window's key: 1 (data) or -FI_EAVAIL (err_).
	ssize_t read_source(struct fid_ep *reader, struct fid_cq *cq, uint64_t key)
	{
		struct fi_cq_data_entry entry {};
		EXPECT_EQ(fi_read(reader, local_.data(), kLen, fi_mr_desc(local_mr_), 0,
				  reinterpret_cast<uintptr_t>(source_), key, (void *)"read"), 0);
		return wait_cq(cq, &entry, &err_);
	}

	static constexpr size_t kLen = 256 * 1024;
	char *source_ = nullptr;
	std::vector<char> local_;
	struct fid_mr *local_mr_ = nullptr;
	struct fid_mr *window_ = nullptr;
	struct fi_cq_err_entry err_ {};
};

// Bound over server_'s QP: client_ (its peer) reads through it; once closed the same key
// and range give an error completion, never data, also after the pages were unmapped.
TEST_F(VerbsWindow, PeerReadsWhileOfferedAndNeverAfterClose)
{
	ASSERT_EQ(fi_mr_bind(window_, &server_->fid, 0), 0);
	EXPECT_EQ(fi_mr_bind(window_, &server_->fid, 0), -FI_EALREADY);
	ASSERT_EQ(fi_mr_enable(window_), 0);
	uint64_t key = fi_mr_key(window_);
	ASSERT_EQ(read_source(client_, client_tx_, key), 1);
	EXPECT_EQ(local_[0], 's');
	EXPECT_EQ(local_[kLen - 1], 's');

	ASSERT_EQ(fi_close(&window_->fid), 0);
	window_ = nullptr;
	ASSERT_EQ(munmap(source_, kLen), 0);
	void *again = mmap(source_, kLen, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(again, source_);
	memset(source_, 'n', kLen);
	local_.assign(kLen, 0);
	ASSERT_EQ(read_source(client_, client_tx_, key), -FI_EAVAIL);
	EXPECT_EQ(err_.err, FI_EIO);
	EXPECT_EQ(local_[0], 0);
	EXPECT_EQ(local_[kLen - 1], 0);
}

// The reader's acknowledgement invalidates the key (OFI_SEND_INVALIDATE, as ofi_rxm's
// rndv_done): the key is dead at once, and at close the window goes back to the domain's
// pool (no ibv_dealloc_mw); the next window region reuses it under a new key, which works,
// while the old key reaches nothing. Without the invalidation the window is deallocated.
TEST_F(VerbsWindow, PeerInvalidationKillsTheKeyAndTheWindowIsReused)
{
	auto *region = verbs::VerbsMemoryRegion::from_desc(fi_mr_desc(window_));
	verbs::WindowPool &pool = region->domain()->windows();
	ASSERT_EQ(fi_mr_bind(window_, &server_->fid, 0), 0);
	ASSERT_EQ(fi_mr_enable(window_), 0);
	uint64_t old_key = fi_mr_key(window_);
	ASSERT_EQ(read_source(client_, client_tx_, old_key), 1);

	std::vector<char> rx;
	post_recv(server_, rx, "ack");
	char ack[8] = "done";
	struct iovec iov = {ack, sizeof(ack)};
	struct fi_msg msg {};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.context = (void *)"ack-sent";
	msg.data = old_key;
	EXPECT_EQ(fi_sendmsg(client_, &msg, OFI_SEND_INVALIDATE | FI_REMOTE_CQ_DATA), -FI_EINVAL);
	ASSERT_EQ(fi_sendmsg(client_, &msg, OFI_SEND_INVALIDATE), 0);
	struct fi_cq_data_entry entry {};
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err_), 1);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err_), 1);

	uint64_t allocated = pool.allocated(), deallocated = pool.deallocated();
	ASSERT_EQ(fi_close(&window_->fid), 0);
	window_ = nullptr;
	EXPECT_EQ(pool.deallocated(), deallocated); // pooled: the peer killed the key

	ASSERT_EQ(fi_mr_reg(domain_, source_, kLen, FI_REMOTE_READ, 0, 0, OFI_MR_BIND_TO_EP,
			    &window_, nullptr), 0);
	EXPECT_EQ(pool.allocated(), allocated); // the same window
	uint64_t new_key = fi_mr_key(window_);
	EXPECT_NE(new_key, old_key);
	ASSERT_EQ(fi_mr_bind(window_, &server_->fid, 0), 0);
	ASSERT_EQ(fi_mr_enable(window_), 0);
	memset(source_, 'r', kLen);
	ASSERT_EQ(read_source(client_, client_tx_, new_key), 1);
	EXPECT_EQ(local_[0], 'r');

	// Not invalidated by the peer this time: deallocated at close.
	ASSERT_EQ(fi_close(&window_->fid), 0);
	window_ = nullptr;
	EXPECT_EQ(pool.deallocated(), deallocated + 1);
	EXPECT_EQ(pool.allocated(), allocated);

	// The first key reaches nothing (last: a failed read breaks the client's QP).
	local_.assign(kLen, 0);
	ASSERT_EQ(read_source(client_, client_tx_, old_key), -FI_EAVAIL);
	EXPECT_EQ(err_.err, FI_EIO);
	EXPECT_EQ(local_[0], 0);
}

// Invalidated by the peer but not yet closed: the key is already dead.
TEST_F(VerbsWindow, InvalidatedKeyIsDeadBeforeClose)
{
	ASSERT_EQ(fi_mr_bind(window_, &server_->fid, 0), 0);
	ASSERT_EQ(fi_mr_enable(window_), 0);
	uint64_t key = fi_mr_key(window_);
	std::vector<char> rx;
	post_recv(server_, rx, "ack");
	char ack[8] = "done";
	struct iovec iov = {ack, sizeof(ack)};
	struct fi_msg msg {};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.data = key;
	ASSERT_EQ(fi_sendmsg(client_, &msg, OFI_SEND_INVALIDATE), 0);
	struct fi_cq_data_entry entry {};
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err_), 1);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err_), 1);
	ASSERT_EQ(read_source(client_, client_tx_, key), -FI_EAVAIL);
	EXPECT_EQ(err_.err, FI_EIO);
	EXPECT_EQ(local_[0], 0);
}

// A key bound over one QP is refused to a read arriving on another QP of the domain (a
// third party's connection): server_'s reads arrive on client_'s QP.
TEST_F(VerbsWindow, OtherConnectionCannotReadIt)
{
	ASSERT_EQ(fi_mr_bind(window_, &server_->fid, 0), 0);
	ASSERT_EQ(fi_mr_enable(window_), 0);
	ASSERT_EQ(read_source(server_, server_tx_, fi_mr_key(window_)), -FI_EAVAIL);
	EXPECT_EQ(err_.err, FI_EIO);
	EXPECT_EQ(local_[0], 0);
}

// Not yet enabled (never bound): the key reaches nothing.
TEST_F(VerbsWindow, KeyWorksOnlyOnceEnabled)
{
	EXPECT_EQ(fi_mr_enable(window_), -FI_EOPBADSTATE);
	ASSERT_EQ(read_source(client_, client_tx_, fi_mr_key(window_)), -FI_EAVAIL);
	EXPECT_EQ(err_.err, FI_EIO);
	EXPECT_EQ(local_[0], 0);
}

TEST_F(VerbsDevice, BadInputIsRefused)
{
	client_tx_ = open_cq();
	client_rx_ = open_cq();
	client_ = open_ep(info_, client_tx_, client_rx_);
	std::vector<char> buf(kBufferSize, 0);
	struct fid_mr *mr = nullptr;
	EXPECT_EQ(fi_mr_reg(domain_, buf.data(), buf.size(), 1ULL << 60, 0, 0, 0, &mr, nullptr),
		  -FI_EINVAL);
	EXPECT_EQ(fi_mr_reg(domain_, buf.data(), buf.size(), FI_RECV, 0, 0, 1, &mr, nullptr),
		  -FI_EBADFLAGS);
	// Not connected yet.
	EXPECT_EQ(fi_send(client_, buf.data(), 8, nullptr, 0, nullptr), -FI_EOPBADSTATE);
	char too_much[100] = {};
	struct sockaddr_in somewhere = *static_cast<struct sockaddr_in *>(info_->src_addr);
	somewhere.sin_port = htons(9);
	EXPECT_EQ(fi_connect(client_, &somewhere, too_much, sizeof(too_much)), -FI_EINVAL);
	// A receive without a descriptor cannot be posted under FI_MR_LOCAL.
	EXPECT_EQ(fi_recv(client_, buf.data(), buf.size(), nullptr, 0, nullptr), -FI_EINVAL);
	// Unknown flags.
	struct iovec iov = {buf.data(), 8};
	struct fi_msg msg {};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	EXPECT_EQ(fi_recvmsg(client_, &msg, FI_MULTI_RECV), -FI_EBADFLAGS);
	// Too many iovs.
	std::vector<struct iovec> many(64, iov);
	msg.msg_iov = many.data();
	msg.iov_count = many.size();
	EXPECT_EQ(fi_recvmsg(client_, &msg, 0), -FI_EINVAL);
	// Remote CQ data of a write needs a posted receive, which only FI_RX_CQ_DATA allows.
	struct fi_info *no_cq_data = fi_dupinfo(info_);
	no_cq_data->mode &= ~FI_RX_CQ_DATA;
	no_cq_data->rx_attr->mode &= ~FI_RX_CQ_DATA;
	struct fid_ep *plain = open_ep(no_cq_data, client_tx_, client_rx_);
	fi_freeinfo(no_cq_data);
	ASSERT_TRUE(plain);
	EXPECT_EQ(fi_writedata(plain, buf.data(), 8, nullptr, 1, 0, 0, 0, nullptr), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_close(&plain->fid), 0);
	size_t size = 0, len = sizeof(size);
	EXPECT_EQ(fi_getopt(&client_->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &len), 0);
	EXPECT_GT(size, 0u);
}

TEST_F(VerbsDevice, ShutdownReachesThePeer)
{
	connect_pair();
	if (HasFatalFailure())
		return;
	ASSERT_EQ(fi_shutdown(client_, 0), 0);
	Event shutdown;
	ASSERT_TRUE(wait_event(FI_SHUTDOWN, &server_->fid, &shutdown));
	// The server's early receive is flushed back to it.
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};
	EXPECT_EQ(wait_cq(server_rx_, &entry, &err), -FI_EAVAIL);
	EXPECT_EQ(err.err, FI_ECANCELED);
}

TEST_F(VerbsDevice, SelectiveCompletionReportsOnlyWhatIsAskedFor)
{
	client_tx_bind_flags_ = FI_TRANSMIT | FI_SELECTIVE_COMPLETION;
	connect_pair();
	if (HasFatalFailure())
		return;
	char small[8] = "quiet";
	ASSERT_EQ(fi_send(client_, small, sizeof(small), nullptr, 0, (void *)"quiet"), 0);
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	post_recv(server_, server_buf_, "rx2");
	struct iovec iov = {small, sizeof(small)};
	struct fi_msg msg {};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.context = (void *)"loud";
	ASSERT_EQ(fi_sendmsg(client_, &msg, FI_COMPLETION), 0);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	EXPECT_STREQ((char *)entry.op_context, "loud");
	EXPECT_EQ(fi_cq_read(client_tx_, &entry, 1), -FI_EAGAIN);
}

TEST_F(VerbsDevice, EqWriteAndItsWaitFd)
{
	int fd = -1;
	ASSERT_EQ(fi_control(&eq_->fid, FI_GETWAIT, &fd), 0);
	struct pollfd pfd = {fd, POLLIN, 0};
	EXPECT_EQ(poll(&pfd, 1, 0), 0);
	struct fi_eq_entry in {};
	in.context = (void *)"user";
	in.data = 42;
	ASSERT_EQ(fi_eq_write(eq_, FI_NOTIFY, &in, sizeof(in), 0), (ssize_t)sizeof(in));
	EXPECT_EQ(poll(&pfd, 1, 0), 1);
	struct fi_eq_entry out {};
	uint32_t event = 0;
	ASSERT_EQ(fi_eq_read(eq_, &event, &out, sizeof(out), 0), (ssize_t)sizeof(out));
	EXPECT_EQ(event, (uint32_t)FI_NOTIFY);
	EXPECT_EQ(out.data, 42u);
	EXPECT_EQ(poll(&pfd, 1, 0), 0);
	EXPECT_EQ(fi_eq_read(eq_, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	EXPECT_EQ(fi_eq_sread(eq_, &event, &out, sizeof(out), 20, 0), -FI_EAGAIN);
}

// FI_PEEK leaves the entry for the next read; wait objects the rdma_cm channel cannot serve
// are refused.
TEST_F(VerbsDevice, EqPeeksAndRefusesWaitObjectsItCannotServe)
{
	struct fi_eq_entry in {};
	in.data = 7;
	ASSERT_EQ(fi_eq_write(eq_, FI_NOTIFY, &in, sizeof(in), 0), (ssize_t)sizeof(in));
	struct fi_eq_entry out {};
	uint32_t event = 0;
	ASSERT_EQ(fi_eq_read(eq_, &event, &out, sizeof(out), FI_PEEK), (ssize_t)sizeof(out));
	EXPECT_EQ(out.data, 7u);
	out = {};
	ASSERT_EQ(fi_eq_sread(eq_, &event, &out, sizeof(out), 0, 0), (ssize_t)sizeof(out));
	EXPECT_EQ(out.data, 7u);
	EXPECT_EQ(fi_eq_read(eq_, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	struct fid_eq *eq = nullptr;
	for (enum fi_wait_obj wait : {FI_WAIT_SET, FI_WAIT_YIELD, FI_WAIT_MUTEX_COND}) {
		struct fi_eq_attr attr {};
		attr.wait_obj = wait;
		EXPECT_EQ(fi_eq_open(fabric_, &attr, &eq, nullptr), -FI_ENOSYS) << wait;
	}
}

// The credit hooks rxm uses (prov/util/flow_ctrl_ops.h): once enabled, a send that would land
// in a peer receive needs a credit, RMA writes do not, and added credits allow more sends.
TEST_F(VerbsDevice, FlowControlOpsRefuseSendsWithoutCredits)
{
	void *opened = nullptr;
	EXPECT_EQ(fi_open_ops(&domain_->fid, "no-such-ops", 0, &opened, nullptr), -FI_ENOSYS);
	ASSERT_EQ(fi_open_ops(&domain_->fid, OFI_FLOW_CTRL_OPS_NAME, 0, &opened, nullptr), 0);
	auto *ops = static_cast<struct ofi_flow_ctrl_ops *>(opened);
	ASSERT_GE(ops->size, sizeof(*ops));
	connect_pair();
	if (HasFatalFailure())
		return;
	EXPECT_EQ(ops->credits(client_), -FI_EOPBADSTATE);
	EXPECT_EQ(ops->add_credits(client_, 1), -FI_EOPBADSTATE);
	EXPECT_EQ(ops->enable(reinterpret_cast<struct fid_ep *>(domain_), 1), -FI_EINVAL);
	ASSERT_EQ(ops->enable(client_, 1), 0);
	EXPECT_EQ(ops->enable(client_, 1), -FI_EALREADY);
	EXPECT_EQ(ops->credits(client_), 1);

	char small[8] = "credit";
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};
	ASSERT_EQ(fi_inject(client_, small, sizeof(small), 0), 0); // the server's early receive
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_EQ(ops->credits(client_), 0);
	// The server posts a receive, but nobody told the client: still refused.
	post_recv(server_, server_buf_, "rx-after");
	EXPECT_EQ(fi_inject(client_, small, sizeof(small), 0), -FI_EAGAIN);
	EXPECT_EQ(fi_senddata(client_, small, sizeof(small), nullptr, 1, 0, nullptr), -FI_EAGAIN);

	// An RMA write consumes no receive and needs no credit.
	std::vector<char> target(64, 0);
	struct fid_mr *target_mr = reg(target.data(), target.size(), FI_REMOTE_WRITE);
	ASSERT_EQ(fi_inject_write(client_, small, sizeof(small), 0,
				  reinterpret_cast<uintptr_t>(target.data()), fi_mr_key(target_mr)),
		  0);

	ASSERT_EQ(ops->add_credits(client_, 1), 0);
	EXPECT_EQ(ops->credits(client_), 1);
	ASSERT_EQ(fi_inject(client_, small, sizeof(small), 0), 0);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_STREQ((char *)entry.op_context, "rx-after");
	EXPECT_EQ(ops->credits(client_), 0);
	// The other direction was never limited.
	EXPECT_EQ(fi_inject(server_, small, sizeof(small), 0), 0);
	ASSERT_EQ(wait_cq(client_rx_, &entry, &err), 1);
}

TEST_F(VerbsDevice, SharedReceiveContextFeedsEveryBoundEndpoint)
{
	// fi_rx_size_left is deprecated in the 1.17 headers; its ops entry is still there.
	auto rx_left = [](struct fid_ep *ep) { return ep->ops->rx_size_left(ep); };
	struct fi_rx_attr attr {};
	attr.caps = FI_MSG | FI_RECV;
	attr.size = 16;
	attr.iov_limit = 2;
	ASSERT_EQ(fi_srx_context(domain_, &attr, &srx_, nullptr), 0);
	ASSERT_TRUE(srx_);
	EXPECT_EQ(rx_left(srx_), 16);
	// Both ends of the connection (one domain here) take their receives from the SRQ.
	connect_pair();
	if (HasFatalFailure())
		return;
	std::vector<char> rx(4 * kBufferSize, 0);
	struct fid_mr *rx_mr = reg(rx.data(), rx.size(), FI_RECV);
	void *rx_desc = fi_mr_desc(rx_mr);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(fi_recv(srx_, rx.data() + i * kBufferSize, kBufferSize, rx_desc, 0,
				  &rx[i * kBufferSize]), 0);
	EXPECT_EQ(rx_left(srx_), 12);
	EXPECT_EQ(rx_left(server_), 12);

	std::vector<char> src(kBufferSize, 's');
	struct fid_mr *src_mr = reg(src.data(), src.size(), FI_SEND);
	void *desc = fi_mr_desc(src_mr);
	struct fi_cq_data_entry entry {};
	struct fi_cq_err_entry err {};
	// Client to server: the server's QP consumes the first shared receive.
	ASSERT_EQ(fi_send(client_, src.data(), 3000, desc, 0, nullptr), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_EQ(entry.op_context, &rx[0]);
	EXPECT_EQ(entry.flags, FI_RECV | FI_MSG);
	EXPECT_EQ(entry.len, 3000u);
	EXPECT_EQ(rx[2999], 's');
	// Server to client, with immediate data: the client's QP consumes the next one.
	std::memset(src.data(), 'c', 100);
	ASSERT_EQ(fi_senddata(server_, src.data(), 100, desc, 0x5eed, 0, nullptr), 0);
	ASSERT_EQ(wait_cq(server_tx_, &entry, &err), 1);
	ASSERT_EQ(wait_cq(client_rx_, &entry, &err), 1);
	EXPECT_EQ(entry.op_context, &rx[kBufferSize]);
	EXPECT_EQ(entry.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	EXPECT_EQ(entry.data, 0x5eedu);
	EXPECT_EQ(rx[kBufferSize + 99], 'c');
	EXPECT_EQ(rx_left(srx_), 14);

	// A two-piece receive lands a message across both pieces.
	struct iovec iov[2] = {{rx.data() + 2 * kBufferSize, 4}, {rx.data() + 3 * kBufferSize, 4}};
	void *descs[2] = {rx_desc, rx_desc};
	struct fi_msg msg {};
	msg.msg_iov = iov;
	msg.desc = descs;
	msg.iov_count = 2;
	msg.context = (void *)"two-piece";
	// The two receives still queued go first; drain them with two sends, then this one.
	ASSERT_EQ(fi_recvmsg(srx_, &msg, 0), 0);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(fi_send(client_, src.data(), 10, desc, 0, nullptr), 0);
		ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
		ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	}
	std::memcpy(src.data(), "abcdefgh", 8);
	ASSERT_EQ(fi_send(client_, src.data(), 8, desc, 0, nullptr), 0);
	ASSERT_EQ(wait_cq(client_tx_, &entry, &err), 1);
	ASSERT_EQ(wait_cq(server_rx_, &entry, &err), 1);
	EXPECT_STREQ((char *)entry.op_context, "two-piece");
	EXPECT_EQ(std::string(rx.data() + 2 * kBufferSize, 4), "abcd");
	EXPECT_EQ(std::string(rx.data() + 3 * kBufferSize, 4), "efgh");

	// Bad input, and the rules of a shared context.
	char plain[8];
	EXPECT_EQ(fi_recv(srx_, plain, sizeof(plain), nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_recv(srx_, plain, sizeof(plain), rx_desc, 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_recvv(srx_, iov, descs, 3, 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_recvmsg(srx_, &msg, FI_MULTI_RECV), -FI_EBADFLAGS);
	EXPECT_EQ(fi_recv(server_, rx.data(), 8, rx_desc, 0, nullptr), -FI_EOPNOTSUPP);
	EXPECT_EQ(fi_send(srx_, src.data(), 8, desc, 0, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_write(srx_, src.data(), 8, desc, 0, 0, 0, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_close(&srx_->fid), -FI_EBUSY); // endpoints still bound
	struct fid_ep *other = nullptr;
	ASSERT_EQ(fi_endpoint(domain_, info_, &other, nullptr), 0);
	EXPECT_EQ(fi_ep_bind(other, &srx_->fid, 0), 0);
	EXPECT_EQ(fi_ep_bind(other, &srx_->fid, 0), -FI_EINVAL); // only one
	EXPECT_EQ(fi_close(&other->fid), 0);
	{
		struct fi_rx_attr tagged {};
		tagged.caps = FI_TAGGED;
		struct fid_ep *refused = nullptr;
		EXPECT_EQ(fi_srx_context(domain_, &tagged, &refused, nullptr), -FI_EINVAL);
	}
	// TearDown closes the endpoints, then the context (with a receive still posted).
	ASSERT_EQ(fi_recv(srx_, rx.data(), 8, rx_desc, 0, nullptr), 0);
}

// ---- Resources over many life cycles ----

// Counts of the rdma resources (pd, cq, qp, cm_id, mr, ctx) the kernel holds on the device,
// from `rdma resource show` (iproute2); empty when the tool or netlink is unavailable.
std::string rdma_resource_summary()
{
	FILE *p = popen("rdma resource show 2>/dev/null", "r");
	if (!p)
		return "";
	std::string out;
	char line[512];
	while (fgets(line, sizeof(line), p))
		out += line;
	pclose(p);
	return out;
}

using process_usage::open_fd_count;
using process_usage::resident_kib;

// One whole life: fabric, EQ, domain, CQs, MRs, a listener and a connected pair that
// exchanges a message, then everything closed with a receive still posted on each side
// (the close must flush or drop it, not leak its slot or the QP).
class VerbsLifeCycle : public VerbsDevice {
public:
	void TestBody() override {}
	bool live_once()
	{
		SetUp();
		bool ok = !HasFatalFailure() && info_;
		if (ok) {
			connect_pair();
			ok = !HasFatalFailure();
		}
		if (ok) {
			char text[16] = "cycle";
			EXPECT_EQ(fi_send(client_, text, sizeof(text), nullptr, 0, nullptr), 0);
			struct fi_cq_data_entry entry {};
			struct fi_cq_err_entry err {};
			ok = wait_cq(server_rx_, &entry, &err) == 1 && wait_cq(client_tx_, &entry, &err) == 1;
			post_recv(server_, server_buf_, "left-posted");
		}
		TearDown();
		return ok && !HasFailure();
	}
};

int life_cycles()
{
	const char *env = getenv("VERBS_LEAK_CYCLES");
	return env ? atoi(env) : 1000;
}

TEST(VerbsResources, OpenCloseCyclesLeaveFdsMemoryAndDeviceObjectsFlat)
{
	{
		struct fi_info *probe = verbs_info();
		if (!probe)
			GTEST_SKIP() << "no verbs device here";
		fi_freeinfo(probe);
	}
	for (int i = 0; i < 10; i++) {   // warm-up: one-time allocations settle
		VerbsLifeCycle warm;
		ASSERT_TRUE(warm.live_once()) << "warm-up cycle " << i;
	}
	int fds_before = open_fd_count();
	long rss_before = resident_kib();
	std::string rdma_before = rdma_resource_summary();
	int n = life_cycles();
	auto start = std::chrono::steady_clock::now();
	for (int i = 0; i < n; i++) {
		VerbsLifeCycle life;
		ASSERT_TRUE(life.live_once()) << "cycle " << i;
	}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	int fds_after = open_fd_count();
	long rss_after = resident_kib();
	std::string rdma_after = rdma_resource_summary();
	printf("%d connected life cycles in %.1f s: fds %d -> %d, RSS %ld -> %ld KiB\n"
	       "rdma resources before:\n%safter:\n%s",
	       n, secs, fds_before, fds_after, rss_before, rss_after, rdma_before.c_str(),
	       rdma_after.c_str());
	EXPECT_EQ(fds_before, fds_after);
	EXPECT_EQ(rdma_before, rdma_after) << "a pd, cq, qp, cm_id, mr or context outlived its cycle";
	// Allocator noise allowance; a leak of 1 KiB per cycle is well over it.
	EXPECT_LT(rss_after - rss_before, 768);
}

} // namespace
