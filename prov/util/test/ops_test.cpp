// Ops-table generation: exceptions become error codes, missing members -FI_ENOSYS, every
// entry non-NULL; fid recovery refuses wrong classes and stale fids.
#include "prov/util/test/fake_provider.h"

#include "prov/util/ops_tables.h"

namespace {

using fake::Fixture;

template <class Table>
void expect_all_entries_set(const Table &table)
{
	// Everything after 'size' is a function pointer.
	auto *entries = reinterpret_cast<void *const *>(reinterpret_cast<const char *>(&table) +
							 sizeof(size_t));
	size_t count = (sizeof(Table) - sizeof(size_t)) / sizeof(void *);
	EXPECT_EQ(table.size, sizeof(Table));
	for (size_t i = 0; i < count; ++i)
		EXPECT_NE(entries[i], nullptr) << "entry " << i;
}

// Compile-time checks a provider can use to catch members with a wrong signature.
// GCC does not fold function-address comparisons to constants under -fsanitize=address, so
// the ASan build checks the same at run time only (ImplementedTellsThunksFromStubs).
#ifndef __SANITIZE_ADDRESS__
static_assert(util::implemented(util::make_msg_ops<fake::FakeEndpoint>().send));
static_assert(util::implemented(util::make_tagged_ops<fake::FakeEndpoint>().send));
static_assert(!util::implemented(util::make_msg_ops<fake::FakeEndpoint>().recv));
static_assert(!util::implemented(util::make_rma_ops<fake::FakeEndpoint>().write));
#endif

TEST(Ops, ImplementedTellsThunksFromStubs)
{
	EXPECT_TRUE(util::implemented(util::make_msg_ops<fake::FakeEndpoint>().send));
	EXPECT_TRUE(util::implemented(util::make_tagged_ops<fake::FakeEndpoint>().send));
	EXPECT_FALSE(util::implemented(util::make_msg_ops<fake::FakeEndpoint>().recv));
	EXPECT_FALSE(util::implemented(util::make_rma_ops<fake::FakeEndpoint>().write));
}

TEST_F(Fixture, EveryEndpointTableEntryIsSet)
{
	struct fid_ep *ep = open_ep();
	ASSERT_NE(ep, nullptr);
	expect_all_entries_set(*ep->fid.ops);
	expect_all_entries_set(*ep->ops);
	expect_all_entries_set(*ep->cm);
	expect_all_entries_set(*ep->msg);
	expect_all_entries_set(*ep->rma);
	expect_all_entries_set(*ep->tagged);
	expect_all_entries_set(*ep->atomic);
	expect_all_entries_set(*ep->collective);
	expect_all_entries_set(*domain->ops);
	expect_all_entries_set(*domain->mr);
	expect_all_entries_set(*fabric->ops);
	EXPECT_EQ(fi_close(&ep->fid), 0);
}

TEST_F(Fixture, ExceptionsBecomeErrorCodes)
{
	struct fid_ep *ep = open_ep();
	ASSERT_NE(ep, nullptr);
	int dummy = 0;
	EXPECT_EQ(fi_inject(ep, &dummy, sizeof(dummy), 0), -FI_ENOMEM);       // bad_alloc
	EXPECT_EQ(fi_senddata(ep, &dummy, 4, nullptr, 1, 0, nullptr), -FI_EOTHER);  // other
	EXPECT_EQ(fi_send(ep, nullptr, 4, nullptr, 0, nullptr), -FI_EINVAL);  // util::Error
	EXPECT_EQ(fi_close(&ep->fid), 0);
}

TEST_F(Fixture, MissingMembersReturnENOSYS)
{
	struct fid_ep *ep = open_ep();
	ASSERT_NE(ep, nullptr);
	char buf[8];
	EXPECT_EQ(fi_recv(ep, buf, sizeof(buf), nullptr, 0, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_read(ep, buf, sizeof(buf), nullptr, 0, 0, 0, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_connect(ep, buf, nullptr, 0), -FI_ENOSYS);
	size_t len = sizeof(buf);
	EXPECT_EQ(fi_getname(&ep->fid, buf, &len), -FI_ENOSYS);
	EXPECT_EQ(fi_close(&ep->fid), 0);
}

TEST_F(Fixture, FidCastChecksClass)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	ASSERT_NE(cq, nullptr);
	EXPECT_NE(util::fid_cast<util::CompletionQueue>(&cq->fid, FI_CLASS_CQ), nullptr);
	EXPECT_EQ(util::fid_cast<util::CompletionQueue>(&cq->fid, FI_CLASS_EQ), nullptr);
	EXPECT_EQ(util::fid_cast<util::EventQueue>(&cq->fid), nullptr);
	EXPECT_EQ(util::fid_cast<util::CompletionQueue>(nullptr), nullptr);

	// A fid that prov/util did not create is refused.
	struct {
		uint64_t junk[2] = {1, 2};
		struct fid fid = {FI_CLASS_CQ, nullptr, nullptr};
	} foreign;
	EXPECT_EQ(util::fid_cast<util::CompletionQueue>(&foreign.fid), nullptr);

	// Binding something of the wrong class to an endpoint is -FI_EINVAL.
	struct fid_ep *ep = open_ep();
	EXPECT_EQ(fi_ep_bind(ep, &domain->fid, 0), -FI_EINVAL);
	EXPECT_EQ(fi_ep_bind(ep, &foreign.fid, FI_TRANSMIT), -FI_EINVAL);
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, FidCastExactWantsTheTableOfExactlyThatClass)
{
	struct fid_ep *ep = open_ep();
	ASSERT_NE(ep, nullptr);
	auto *object = util::fid_cast<fake::FakeEndpoint>(&ep->fid, FI_CLASS_EP);
	ASSERT_NE(object, nullptr);
	EXPECT_EQ(util::fid_cast_exact<fake::FakeEndpoint>(&ep->fid), object);
	// A live util object of another class, NULL and a foreign fid are all refused.
	EXPECT_EQ(util::fid_cast_exact<fake::FakeEndpoint>(&domain->fid), nullptr);
	EXPECT_EQ(util::fid_cast_exact<fake::FakeEndpoint>(nullptr), nullptr);
	struct {
		uint64_t junk[2] = {1, 2};
		struct fid fid = {FI_CLASS_EP, nullptr, nullptr};
	} foreign;
	foreign.fid.ops = ep->fid.ops;  // right table, but no live util header before it
	EXPECT_EQ(util::fid_cast_exact<fake::FakeEndpoint>(&foreign.fid), nullptr);
	EXPECT_EQ(fi_close(&ep->fid), 0);
}

TEST_F(Fixture, RetiredFidIsRefusedWhileTheObjectLives)
{
	struct fid_ep *ep = open_ep();
	ASSERT_NE(ep, nullptr);
	auto *object = util::fid_cast<fake::FakeEndpoint>(&ep->fid, FI_CLASS_EP);
	ASSERT_NE(object, nullptr);
	object->retire_fid();
	EXPECT_EQ(util::fid_cast<fake::FakeEndpoint>(&ep->fid, FI_CLASS_EP), nullptr);
	EXPECT_EQ(util::fid_cast_exact<fake::FakeEndpoint>(&ep->fid), nullptr);
	// The ops thunks refuse it too, instead of running on the object.
	char buf[8] = {};
	EXPECT_EQ(fi_send(ep, buf, sizeof(buf), nullptr, 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(fi_close(&ep->fid), -FI_EINVAL);
	EXPECT_EQ(object->close(), 0);  // the owner still releases it
}

TEST_F(Fixture, BoundObjectsAreBusy)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	struct fid_ep *ep = open_ep();
	ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), -FI_EALREADY);
	EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

} // namespace
