// Emulated atomic operations applied at the target.
#include "prov/rxm/rxm_atomic_exec.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

using namespace rxm;

TEST(RxmAtomicExec, ArithmeticAndFetch)
{
	int32_t target[3] = {5, -2, 7};
	int32_t operand[3] = {1, 10, -7};
	int32_t old[3] = {};
	ASSERT_EQ(0, atomic_apply(FI_SUM, FI_INT32, target, operand, nullptr, old, 3));
	EXPECT_EQ(6, target[0]);
	EXPECT_EQ(8, target[1]);
	EXPECT_EQ(0, target[2]);
	EXPECT_EQ(-2, old[1]);
	ASSERT_EQ(0, atomic_apply(FI_MIN, FI_INT32, target, operand, nullptr, nullptr, 3));
	EXPECT_EQ(1, target[0]);
	EXPECT_EQ(-7, target[2]);
	ASSERT_EQ(0, atomic_apply(FI_ATOMIC_READ, FI_INT32, target, nullptr, nullptr, old, 3));
	EXPECT_EQ(1, old[0]);
	EXPECT_EQ(1, target[0]); // a read leaves the target alone
}

TEST(RxmAtomicExec, CompareOpsAndMaskedSwap)
{
	uint64_t target = 10, operand = 99, compare = 10, old = 0;
	ASSERT_EQ(0, atomic_apply(FI_CSWAP, FI_UINT64, &target, &operand, &compare, &old, 1));
	EXPECT_EQ(99u, target);
	EXPECT_EQ(10u, old);
	compare = 5; // 5 != 99: no swap
	ASSERT_EQ(0, atomic_apply(FI_CSWAP, FI_UINT64, &target, &operand, &compare, &old, 1));
	EXPECT_EQ(99u, target);
	uint8_t t8 = 0xf0, a8 = 0x0f, mask = 0x3c;
	ASSERT_EQ(0, atomic_apply(FI_MSWAP, FI_UINT8, &t8, &a8, &mask, nullptr, 1));
	EXPECT_EQ(0xcc, t8); // bits under the mask come from the operand
	double d = 1.5, dop = 2.0;
	ASSERT_EQ(0, atomic_apply(FI_PROD, FI_DOUBLE, &d, &dop, nullptr, nullptr, 1));
	EXPECT_DOUBLE_EQ(3.0, d);
}

TEST(RxmAtomicExec, ValidityTable)
{
	EXPECT_TRUE(atomic_supported(FI_SUM, FI_FLOAT, AtomicKind::write));
	EXPECT_FALSE(atomic_supported(FI_BOR, FI_FLOAT, AtomicKind::write));
	EXPECT_FALSE(atomic_supported(FI_ATOMIC_READ, FI_UINT32, AtomicKind::write));
	EXPECT_TRUE(atomic_supported(FI_ATOMIC_READ, FI_UINT32, AtomicKind::fetch));
	EXPECT_FALSE(atomic_supported(FI_CSWAP, FI_UINT32, AtomicKind::fetch));
	EXPECT_TRUE(atomic_supported(FI_CSWAP, FI_UINT32, AtomicKind::compare));
	EXPECT_FALSE(atomic_supported(FI_SUM, FI_LONG_DOUBLE, AtomicKind::write));
	float f = 1, g = 2;
	EXPECT_EQ(-FI_EOPNOTSUPP, atomic_apply(FI_BXOR, FI_FLOAT, &f, &g, nullptr, nullptr, 1));
}
