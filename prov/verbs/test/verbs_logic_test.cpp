// Unit tests of the verbs provider's pure logic; they need no RDMA device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <infiniband/verbs.h>
#include <rdma/fabric.h>

#include "prov/verbs/verbs_cm_data.h"
#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_discovery.h"
#include "prov/verbs/verbs_mr.h"

using namespace verbs;

TEST(VerbsCmData, RoundTripsUserBytes)
{
	const char text[] = "hello";
	auto wire = encode_cm_data(text, sizeof(text));
	ASSERT_TRUE(wire);
	EXPECT_EQ(wire->size(), kCmDataHeaderSize + sizeof(text));
	auto back = decode_cm_data(wire->data(), wire->size());
	ASSERT_TRUE(back);
	ASSERT_EQ(back->size(), sizeof(text));
	EXPECT_EQ(std::memcmp(back->data(), text, sizeof(text)), 0);
}

TEST(VerbsCmData, DecodesThePaddingRdmaCmAdds)
{
	auto wire = encode_cm_data("ab", 2);
	ASSERT_TRUE(wire);
	std::vector<uint8_t> padded(*wire);
	padded.resize(196, 0); // an accept's private data as the peer sees it on RoCE
	auto back = decode_cm_data(padded.data(), padded.size());
	ASSERT_TRUE(back);
	EXPECT_EQ(back->size(), 2u);
}

TEST(VerbsCmData, EmptyAndAbsentDataDecodeToNothing)
{
	auto wire = encode_cm_data(nullptr, 0);
	ASSERT_TRUE(wire);
	auto back = decode_cm_data(wire->data(), wire->size());
	ASSERT_TRUE(back);
	EXPECT_TRUE(back->empty());
	auto absent = decode_cm_data(nullptr, 0);
	ASSERT_TRUE(absent);
	EXPECT_TRUE(absent->empty());
}

TEST(VerbsCmData, RefusesTooMuchUserData)
{
	std::vector<uint8_t> big(kCmDataMax + 1, 7);
	EXPECT_FALSE(encode_cm_data(big.data(), big.size()));
	EXPECT_TRUE(encode_cm_data(big.data(), kCmDataMax));
	EXPECT_FALSE(encode_cm_data(nullptr, 3));
}

TEST(VerbsCmData, RejectsMalformedPeerBytes)
{
	auto wire = encode_cm_data("abcd", 4);
	ASSERT_TRUE(wire);
	// Truncated: the header claims more than arrived.
	EXPECT_FALSE(decode_cm_data(wire->data(), wire->size() - 1));
	// Too short for a header.
	EXPECT_FALSE(decode_cm_data(wire->data(), 3));
	// Wrong magic or version.
	std::vector<uint8_t> bad(*wire);
	bad[0] ^= 0xff;
	EXPECT_FALSE(decode_cm_data(bad.data(), bad.size()));
	bad = *wire;
	bad[1] = 99;
	EXPECT_FALSE(decode_cm_data(bad.data(), bad.size()));
	// A length beyond what the provider ever sends.
	std::vector<uint8_t> huge(200, 0);
	huge[0] = (*wire)[0];
	huge[1] = (*wire)[1];
	huge[2] = 0;
	huge[3] = 150;
	EXPECT_FALSE(decode_cm_data(huge.data(), huge.size()));
}

TEST(VerbsMemoryAccess, MapsEachFlagToWhatVerbsNeeds)
{
	EXPECT_EQ(VerbsMemoryRegion::ibv_access_for(FI_SEND), 0);
	EXPECT_EQ(VerbsMemoryRegion::ibv_access_for(FI_WRITE), 0);
	EXPECT_EQ(VerbsMemoryRegion::ibv_access_for(FI_RECV), IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(VerbsMemoryRegion::ibv_access_for(FI_READ), IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(VerbsMemoryRegion::ibv_access_for(FI_REMOTE_READ), IBV_ACCESS_REMOTE_READ);
	EXPECT_EQ(VerbsMemoryRegion::ibv_access_for(FI_REMOTE_WRITE),
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(VerbsMemoryRegion::ibv_access_for(0),
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
}

TEST(VerbsCompletionErrors, FlushIsCanceledEverythingElseIsIo)
{
	EXPECT_EQ(fi_error_for_wc_status(IBV_WC_WR_FLUSH_ERR), FI_ECANCELED);
	EXPECT_EQ(fi_error_for_wc_status(IBV_WC_REM_ACCESS_ERR), FI_EIO);
	EXPECT_EQ(fi_error_for_wc_status(IBV_WC_LOC_PROT_ERR), FI_EIO);
}

TEST(VerbsDiscovery, FabricNameIsTheGidSubnetPrefix)
{
	EXPECT_EQ(fabric_name_for(0xfe80000000000000ULL), "IB-0xfe80000000000000");
	EXPECT_EQ(fabric_name_for(0x1ULL), "IB-0x0000000000000001");
}
