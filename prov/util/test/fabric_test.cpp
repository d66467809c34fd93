// Fabric-level behaviour: EQ reads progress the fabric and its domains, passive endpoints
// bind EQs, the domain reports MR registrations, fi_trywait checks its arguments.
#include "prov/util/test/fake_provider.h"

#include "prov/util/passive_endpoint.h"

namespace {

using fake::Fixture;

class CountingSource : public util::ProgressSource {
public:
	void progress() override { ++passes; }
	int passes = 0;
};

class FakePassiveEndpoint : public util::PassiveEndpoint {
public:
	FakePassiveEndpoint(util::Fabric &fabric, const struct fi_info *info)
	    : PassiveEndpoint(fabric, info, nullptr)
	{
		install_ops<FakePassiveEndpoint>();
	}
	int listen() { return eq() ? 0 : -FI_ENOEQ; }
};

struct fid_eq *open_eq(struct fid_fabric *fabric, enum fi_wait_obj wait = FI_WAIT_UNSPEC)
{
	struct fi_eq_attr attr{};
	attr.wait_obj = wait;
	struct fid_eq *eq = nullptr;
	EXPECT_EQ(fi_eq_open(fabric, &attr, &eq, nullptr), 0);
	return eq;
}

TEST_F(Fixture, EqReadProgressesFabricAndDomains)
{
	auto *fabric_object = util::fid_cast<util::Fabric>(&fabric->fid, FI_CLASS_FABRIC);
	ASSERT_NE(fabric_object, nullptr);
	CountingSource fabric_source, domain_source;
	ASSERT_EQ(fabric_object->engine().add_source(&fabric_source), 0);
	ASSERT_EQ(domain_object->engine().add_source(&domain_source), 0);
	struct fid_eq *eq = open_eq(fabric);
	uint32_t event;
	struct fi_eq_entry entry;
	EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof(entry), 0), -FI_EAGAIN);
	EXPECT_EQ(fabric_source.passes, 1);
	EXPECT_EQ(domain_source.passes, 1);
	// A CQ read only progresses its own domain.
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_entry cq_entry;
	EXPECT_EQ(fi_cq_read(cq, &cq_entry, 1), -FI_EAGAIN);
	EXPECT_EQ(fabric_source.passes, 1);
	EXPECT_EQ(domain_source.passes, 2);
	fabric_object->engine().remove_source(&fabric_source);
	domain_object->engine().remove_source(&domain_source);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST_F(Fixture, PassiveEndpointBindsAnEq)
{
	auto *fabric_object = util::fid_cast<util::Fabric>(&fabric->fid, FI_CLASS_FABRIC);
	auto *pep = new FakePassiveEndpoint(*fabric_object, info);
	struct fid_pep *pep_fid = pep->pep_fid();
	EXPECT_EQ(fi_listen(pep_fid), -FI_ENOEQ);
	struct fid_eq *eq = open_eq(fabric);
	EXPECT_EQ(fi_pep_bind(pep_fid, &eq->fid, 1), -FI_EBADFLAGS);
	EXPECT_EQ(fi_pep_bind(pep_fid, &domain->fid, 0), -FI_EINVAL);
	ASSERT_EQ(fi_pep_bind(pep_fid, &eq->fid, 0), 0);
	EXPECT_EQ(fi_listen(pep_fid), 0);
	size_t len = 16;
	char name[16];
	EXPECT_EQ(fi_getname(&pep_fid->fid, name, &len), -FI_ENOSYS);
	EXPECT_EQ(fi_close(&eq->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY);
	EXPECT_EQ(fi_close(&pep_fid->fid), 0);
	EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST_F(Fixture, DomainReportsMrRegistrationsOnItsEq)
{
	struct fid_eq *eq = open_eq(fabric);
	EXPECT_EQ(fi_domain_bind(domain, &eq->fid, 1ULL << 3), -FI_EBADFLAGS);
	ASSERT_EQ(fi_domain_bind(domain, &eq->fid, FI_REG_MR), 0);
	static char buffer[8];
	struct fid_mr *mr;
	ASSERT_EQ(fi_mr_reg(domain, buffer, sizeof(buffer), FI_SEND, 0, 0, 0, &mr, this), 0);
	uint32_t event;
	struct fi_eq_entry entry;
	ASSERT_EQ(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		  static_cast<ssize_t>(sizeof(entry)));
	EXPECT_EQ(event, static_cast<uint32_t>(FI_MR_COMPLETE));
	EXPECT_EQ(entry.fid, &mr->fid);
	EXPECT_EQ(entry.context, this);
	EXPECT_EQ(fi_close(&mr->fid), 0);
	EXPECT_EQ(fi_close(&domain->fid), 0);
	domain = nullptr;
	EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST_F(Fixture, TrywaitChecksItsArguments)
{
	struct fid *fids[1] = {&domain->fid};
	EXPECT_EQ(fi_trywait(fabric, fids, 1), -FI_EINVAL);
	EXPECT_EQ(fi_trywait(fabric, nullptr, 1), -FI_EINVAL);
	EXPECT_EQ(fi_trywait(fabric, nullptr, 0), 0);
	struct fid_eq *eq = open_eq(fabric);
	fids[0] = &eq->fid;
	EXPECT_EQ(fi_trywait(fabric, fids, 1), 0);
	struct fi_eq_entry entry{};
	ASSERT_EQ(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0),
		  static_cast<ssize_t>(sizeof(entry)));
	EXPECT_EQ(fi_trywait(fabric, fids, 1), -FI_EAGAIN);
	EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST_F(Fixture, SreadReportsPendingErrors)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_err_entry error{};
	error.err = FI_EIO;
	util::fid_cast<util::CompletionQueue>(&cq->fid)->write_error(error);
	struct fi_cq_entry entry;
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 1000), -FI_EAVAIL);
	struct fi_cq_err_entry out{};
	EXPECT_EQ(fi_cq_readerr(cq, &out, 0), 1);
	EXPECT_EQ(out.err, FI_EIO);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

} // namespace
