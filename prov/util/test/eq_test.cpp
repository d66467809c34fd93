// Event queue: plain and connection events, peek, errors with err_data, blocking reads.
#include "prov/util/test/fake_provider.h"

#include <chrono>
#include <cstring>
#include <poll.h>
#include <thread>

namespace {

using fake::Fixture;

class EqFixture : public Fixture {
protected:
	void SetUp() override
	{
		Fixture::SetUp();
		struct fi_eq_attr attr{};
		attr.wait_obj = FI_WAIT_UNSPEC;
		attr.size = 4;
		ASSERT_EQ(fi_eq_open(fabric, &attr, &eq, nullptr), 0);
		object = util::fid_cast<util::EventQueue>(&eq->fid, FI_CLASS_EQ);
		ASSERT_NE(object, nullptr);
	}
	void TearDown() override
	{
		EXPECT_EQ(fi_close(&eq->fid), 0);
		Fixture::TearDown();
	}
	struct fid_eq *eq = nullptr;
	util::EventQueue *object = nullptr;
};

TEST_F(EqFixture, PlainEventsRoundTrip)
{
	struct fi_eq_entry in{&eq->fid, this, 12};
	ASSERT_EQ(object->write_event(FI_AV_COMPLETE, &in, sizeof(in)), 0);
	uint32_t event = 0;
	struct fi_eq_entry out{};
	EXPECT_EQ(fi_eq_read(eq, &event, &out, 4, 0), -FI_ETOOSMALL);
	ASSERT_EQ(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
		  static_cast<ssize_t>(sizeof(out)));
	ASSERT_EQ(fi_eq_read(eq, &event, &out, sizeof(out), 0), static_cast<ssize_t>(sizeof(out)));
	EXPECT_EQ(event, static_cast<uint32_t>(FI_AV_COMPLETE));
	EXPECT_EQ(out.context, this);
	EXPECT_EQ(out.data, 12u);
	EXPECT_EQ(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	EXPECT_EQ(fi_eq_read(eq, &event, &out, sizeof(out), 1ULL << 40), -FI_EBADFLAGS);
}

TEST_F(EqFixture, ConnectionRequestCarriesInfoAndData)
{
	struct fi_info *req = fi_dupinfo(info);
	const char cm_data[] = "hello";
	ASSERT_EQ(object->write_cm(FI_CONNREQ, &fabric->fid, req, cm_data, sizeof(cm_data)), 0);
	alignas(8) uint8_t buffer[sizeof(struct fi_eq_cm_entry) + 16];
	uint32_t event;
	ssize_t n = fi_eq_read(eq, &event, buffer, sizeof(buffer), 0);
	ASSERT_EQ(n, static_cast<ssize_t>(sizeof(struct fi_eq_cm_entry) + sizeof(cm_data)));
	EXPECT_EQ(event, static_cast<uint32_t>(FI_CONNREQ));
	auto *entry = reinterpret_cast<struct fi_eq_cm_entry *>(buffer);
	EXPECT_EQ(entry->info, req);
	EXPECT_STREQ(reinterpret_cast<const char *>(entry->data), "hello");
	fi_freeinfo(entry->info);  // the application owns it now

	// An unread request is freed by the EQ itself (checked by leak tools).
	ASSERT_EQ(object->write_cm(FI_CONNREQ, &fabric->fid, fi_dupinfo(info), nullptr, 0), 0);
}

TEST_F(EqFixture, ErrorsCarryErrData)
{
	ASSERT_EQ(object->write_error(&eq->fid, this, 3, FI_ECONNREFUSED, 111, "why", 4), 0);
	uint32_t event;
	struct fi_eq_cm_entry entry;
	EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof(entry), 0), -FI_EAVAIL);
	struct fi_eq_err_entry err{};
	ASSERT_EQ(fi_eq_readerr(eq, &err, 0), static_cast<ssize_t>(sizeof(err)));
	EXPECT_EQ(err.err, FI_ECONNREFUSED);
	EXPECT_EQ(err.prov_errno, 111);
	EXPECT_EQ(err.context, this);
	EXPECT_EQ(err.err_data_size, 4u);
	EXPECT_STREQ(static_cast<const char *>(err.err_data), "why");
	EXPECT_EQ(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	char text[64];
	EXPECT_NE(fi_eq_strerror(eq, ECONNREFUSED, nullptr, text, sizeof(text)), nullptr);
}

TEST_F(EqFixture, AppWritesRespectTheSize)
{
	struct fi_eq_entry entry{};
	for (int i = 0; i < 4; ++i)
		EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0),
			  static_cast<ssize_t>(sizeof(entry)));
	EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0), -FI_EAGAIN);
	EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, nullptr, sizeof(entry), 0), -FI_EINVAL);
}

TEST_F(EqFixture, SreadTimesOutAndWakes)
{
	uint32_t event;
	struct fi_eq_entry entry;
	EXPECT_EQ(fi_eq_sread(eq, &event, &entry, sizeof(entry), 30, 0), -FI_EAGAIN);
	std::thread writer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		struct fi_eq_entry in{};
		object->write_event(FI_NOTIFY, &in, sizeof(in));
	});
	EXPECT_EQ(fi_eq_sread(eq, &event, &entry, sizeof(entry), 5000, 0),
		  static_cast<ssize_t>(sizeof(entry)));
	writer.join();
}

TEST_F(EqFixture, WaitFdBecomesReadable)
{
	int fd = -1;
	ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	struct pollfd pfd = {fd, POLLIN, 0};
	EXPECT_EQ(poll(&pfd, 1, 0), 0);
	struct fi_eq_entry in{};
	object->write_event(FI_NOTIFY, &in, sizeof(in));
	EXPECT_EQ(poll(&pfd, 1, 1000), 1);
}

} // namespace
