// fi_strerror: host errno texts below FI_ERRNO_OFFSET, fabric texts above.
#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <string>

namespace {

TEST(Strerror, ErrnoCodesUseTheHostText)
{
	EXPECT_STREQ(fi_strerror(0), "Success");
	EXPECT_STREQ(fi_strerror(FI_EINVAL), strerror(EINVAL));
	EXPECT_STREQ(fi_strerror(FI_EAGAIN), strerror(EAGAIN));
	EXPECT_STREQ(fi_strerror(200), strerror(200));
}

TEST(Strerror, EitherSignIsAccepted)
{
	EXPECT_STREQ(fi_strerror(-FI_EINVAL), fi_strerror(FI_EINVAL));
	EXPECT_STREQ(fi_strerror(-FI_ETRUNC), "Truncation error");
}

TEST(Strerror, FabricCodes)
{
	EXPECT_STREQ(fi_strerror(FI_EOTHER), "Unspecified error");
	EXPECT_STREQ(fi_strerror(FI_ETOOSMALL), "Provided buffer is too small");
	EXPECT_STREQ(fi_strerror(FI_EOPBADSTATE), "Operation not permitted in current state");
	EXPECT_STREQ(fi_strerror(FI_EAVAIL), "Error available");
	EXPECT_STREQ(fi_strerror(FI_EBADFLAGS), "Flags not supported");
	EXPECT_STREQ(fi_strerror(FI_ENOEQ), "Missing or unavailable event queue");
	EXPECT_STREQ(fi_strerror(FI_EDOMAIN), "Invalid resource domain");
	EXPECT_STREQ(fi_strerror(FI_ENOCQ), "Missing or unavailable completion queue");
	EXPECT_STREQ(fi_strerror(FI_ECRC), "CRC error");
	EXPECT_STREQ(fi_strerror(FI_ETRUNC), "Truncation error");
	EXPECT_STREQ(fi_strerror(FI_ENOKEY), "Required key not available");
	EXPECT_STREQ(fi_strerror(FI_ENOAV), "Missing or unavailable address vector");
	EXPECT_STREQ(fi_strerror(FI_EOVERRUN), "Queue has been overrun");
	EXPECT_STREQ(fi_strerror(FI_ENORX), "Receiver not ready, no receive buffers available");
}

TEST(Strerror, CodesPastTheKnownOnesAreUnspecified)
{
	EXPECT_STREQ(fi_strerror(FI_ERRNO_MAX), "Unspecified error");
	EXPECT_STREQ(fi_strerror(1000), "Unspecified error");
	EXPECT_STREQ(fi_strerror(INT_MAX), "Unspecified error");
	EXPECT_STREQ(fi_strerror(-INT_MAX), "Unspecified error");
}

TEST(Strerror, MostNegativeIntHasNoPositiveCounterpart)
{
	EXPECT_EQ(std::string(fi_strerror(INT_MIN)), "Unknown error " + std::to_string(INT_MIN));
}

} // namespace
