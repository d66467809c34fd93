// Connection management of shm endpoints in one process: CM data both ways, reject with
// data, nobody listening, shutdown seen by the peer, nothing left on the filesystem.
#include "prov/shm/test/shm_test_pair.h"

#include <gtest/gtest.h>

#include <dirent.h>

#include <cstring>
#include <string>

namespace {

using shm_test::EqEvent;
using shm_test::ShmPair;

size_t dev_shm_entries()
{
	size_t n = 0;
	if (DIR *d = opendir("/dev/shm")) {
		while (readdir(d))
			n++;
		closedir(d);
	}
	return n;
}

TEST(ShmCm, ConnectAcceptWithCmDataBothWays)
{
	size_t before = dev_shm_entries();
	ShmPair p;
	ASSERT_TRUE(p.open());
	EXPECT_EQ(0, std::string(reinterpret_cast<char *>(p.listen_addr.data())).find("fi_shm://"));
	ASSERT_TRUE(p.connect("hello from the client", "welcome"));
	char name[64];
	size_t len = sizeof(name);
	ASSERT_EQ(0, fi_getpeer(p.client, name, &len));
	EXPECT_EQ(0, memcmp(name, p.listen_addr.data(), 32));
	size_t size = 0, optlen = sizeof(size);
	EXPECT_EQ(0, fi_getopt(&p.client->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &optlen));
	EXPECT_EQ(256u, size);
	// Segments are unnamed memfds: nothing under /dev/shm.
	EXPECT_EQ(before, dev_shm_entries());
}

TEST(ShmCm, RejectCarriesData)
{
	ShmPair p;
	ASSERT_TRUE(p.open());
	ASSERT_EQ(0, fi_connect(p.client, p.listen_addr.data(), "ask", 3));
	EqEvent req = p.wait_eq(p.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	EXPECT_EQ("ask", std::string(req.data.begin(), req.data.end()));
	ASSERT_EQ(0, fi_reject(p.pep, req.info->handle, "no thanks", 9));
	fi_freeinfo(req.info);
	EqEvent c = p.wait_eq(p.client_eq);
	ASSERT_EQ(-FI_EAVAIL, c.ret);
	EXPECT_EQ(FI_ECONNREFUSED, c.error.err);
	EXPECT_EQ("no thanks", std::string(c.err_data.begin(), c.err_data.end()));
}

TEST(ShmCm, NobodyListeningIsRefused)
{
	ShmPair p;
	ASSERT_TRUE(p.open());
	char nobody[32] = "fi_shm://nobody.here";
	ASSERT_EQ(0, fi_connect(p.client, nobody, nullptr, 0));
	EqEvent c = p.wait_eq(p.client_eq);
	ASSERT_EQ(-FI_EAVAIL, c.ret);
	EXPECT_EQ(FI_ECONNREFUSED, c.error.err);
	char bad[32] = "not an address";
	EXPECT_EQ(-FI_EINVAL, fi_connect(p.client, bad, nullptr, 0));
}

TEST(ShmCm, ShutdownReachesThePeer)
{
	ShmPair p;
	ASSERT_TRUE(p.open());
	ASSERT_TRUE(p.connect());
	char buf[8];
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, buf));
	ASSERT_EQ(0, fi_shutdown(p.client, 0));
	EXPECT_EQ(FI_SHUTDOWN, p.wait_eq(p.client_eq).event);
	EqEvent s = p.wait_eq(p.server_eq);
	EXPECT_EQ(FI_SHUTDOWN, s.event);
	EXPECT_EQ(&p.server->fid, s.fid);
	// The receive posted before came back cancelled.
	fi_cq_data_entry e;
	fi_cq_err_entry err{};
	EXPECT_EQ(-FI_EAVAIL, p.wait_cq(p.server_cq, &e, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(-FI_ENOTCONN, fi_send(p.client, buf, 1, nullptr, 0, nullptr));
}

TEST(ShmCm, ClosingTheListenerAbortsAReadRequest)
{
	ShmPair p;
	ASSERT_TRUE(p.open());
	ASSERT_EQ(0, fi_connect(p.client, p.listen_addr.data(), nullptr, 0));
	EqEvent req = p.wait_eq(p.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	ASSERT_EQ(0, fi_close(&p.pep->fid));
	p.pep = nullptr;
	fid_ep *ep = nullptr;
	EXPECT_EQ(-FI_ECONNABORTED, fi_endpoint(p.domain, req.info, &ep, nullptr));
	fi_freeinfo(req.info);
	EqEvent c = p.wait_eq(p.client_eq);
	EXPECT_EQ(-FI_EAVAIL, c.ret);
	EXPECT_EQ(FI_ECONNREFUSED, c.error.err);
}

} // namespace
