// For the rxm_loopback tests that count tcp;ofi_rxm's connections going up and down (a
// restarted peer on the same address, FI_SHUTDOWN, flushed receives; rxm_send_route_test,
// rxm_conn_lifetime_test): the count, which is not in the API, read through the rxm endpoint
// object (rxm_loopback links the convenience library), and their fixture.
#pragma once

#include "config.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/test/rxm_test_node.h"
#include "prov/rxm/test/rxm_test_provider.h"
#include "prov/util/fid_object.h"

#include <cstring>

namespace rxm_test {

// Live connections of the node's endpoint.
inline size_t connections(const RdmNode &node)
{
	auto *obj = util::fid_cast<rxm::RxmEndpoint>(&node.ep->fid, FI_CLASS_EP);
	EXPECT_NE(nullptr, obj);
	return obj ? obj->connection_count() : 0;
}

// "tcp;ofi_rxm" on 127.0.0.1 with FI_SOURCE; the tests skip under another layering (the
// Soft-RoCE VM runs rxm_loopback with RXM_TEST_PROV set).
class TcpRxmConnections : public ::testing::Test {
protected:
	void SetUp() override
	{
		if (strcmp(provider(), "tcp;ofi_rxm") != 0)
			GTEST_SKIP() << "written for tcp;ofi_rxm, not " << provider();
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG | FI_SOURCE;
		hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
		hints->addr_format = FI_SOCKADDR_IN;
		int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
		fi_freeinfo(hints);
#ifdef HAVE_TCP
		ASSERT_EQ(0, ret) << "tcp;ofi_rxm: " << fi_strerror(-ret);
#else
		if (ret)
			GTEST_SKIP() << "built without the tcp provider";
#endif
	}
	void TearDown() override { fi_freeinfo(info); }

	fi_info *info = nullptr;
};

} // namespace rxm_test
