// Completion queue: formats, ordering with errors, overrun, readerr versions, readfrom,
// blocking reads, signal, wait fd and trywait.
#include "prov/util/test/fake_provider.h"

#include "prov/util/cq_progress_ops.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <poll.h>
#include <thread>
#include <vector>

namespace {

using fake::Fixture;
using Clock = std::chrono::steady_clock;

util::CompletionQueue *object_of(struct fid_cq *cq)
{
	return util::fid_cast<util::CompletionQueue>(&cq->fid, FI_CLASS_CQ);
}

struct fi_cq_err_entry error_entry(void *context, int err, const char *data)
{
	struct fi_cq_err_entry entry{};
	entry.op_context = context;
	entry.flags = FI_RECV;
	entry.err = err;
	entry.prov_errno = 42;
	entry.olen = 7;
	entry.err_data = const_cast<char *>(data);
	entry.err_data_size = data ? std::strlen(data) + 1 : 0;
	return entry;
}

TEST_F(Fixture, CqFormatsCopyTheRightFields)
{
	int context;
	char buffer[4];
	for (auto format : {FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
			    FI_CQ_FORMAT_TAGGED, FI_CQ_FORMAT_UNSPEC}) {
		struct fid_cq *cq = open_cq(format);
		ASSERT_NE(cq, nullptr);
		object_of(cq)->write(&context, FI_RECV | FI_TAGGED, 3, buffer, 99, 0x77);
		struct fi_cq_tagged_entry entry;
		std::memset(&entry, 0xab, sizeof(entry));
		ASSERT_EQ(fi_cq_read(cq, &entry, 1), 1);
		EXPECT_EQ(entry.op_context, &context);
		if (format >= FI_CQ_FORMAT_MSG) {
			EXPECT_EQ(entry.flags, FI_RECV | FI_TAGGED);
			EXPECT_EQ(entry.len, 3u);
		} else {
			// Bytes after the context entry are untouched.
			EXPECT_EQ(entry.flags, 0xababababababababULL);
		}
		if (format >= FI_CQ_FORMAT_DATA) {
			EXPECT_EQ(entry.buf, buffer);
			EXPECT_EQ(entry.data, 99u);
		}
		if (format == FI_CQ_FORMAT_TAGGED) {
			EXPECT_EQ(entry.tag, 0x77u);
		}
		EXPECT_EQ(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);
		EXPECT_EQ(fi_close(&cq->fid), 0);
	}
}

TEST_F(Fixture, CqRejectsBadAttributes)
{
	struct fi_cq_attr attr{};
	struct fid_cq *cq = nullptr;
	attr.format = static_cast<enum fi_cq_format>(99);
	EXPECT_EQ(fi_cq_open(domain, &attr, &cq, nullptr), -FI_ENOSYS);
	attr.format = FI_CQ_FORMAT_CONTEXT;
	attr.wait_obj = FI_WAIT_SET;  // without a wait set
	EXPECT_EQ(fi_cq_open(domain, &attr, &cq, nullptr), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_NONE;
	attr.flags = 1ULL << 40;
	EXPECT_EQ(fi_cq_open(domain, &attr, &cq, nullptr), -FI_EBADFLAGS);
}

TEST_F(Fixture, CqErrorsKeepTheirPlaceInOrder)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	util::CompletionQueue *q = object_of(cq);
	int a, b, c;
	q->write(&a, FI_SEND);
	q->write_error(error_entry(&b, FI_ETRUNC, "detail"));
	q->write(&c, FI_SEND);

	struct fi_cq_entry entries[4];
	ASSERT_EQ(fi_cq_read(cq, entries, 4), 1);  // stops before the error
	EXPECT_EQ(entries[0].op_context, &a);
	EXPECT_EQ(fi_cq_read(cq, entries, 4), -FI_EAVAIL);

	struct fi_cq_err_entry err{};
	ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
	EXPECT_EQ(err.op_context, &b);
	EXPECT_EQ(err.err, FI_ETRUNC);
	EXPECT_EQ(err.prov_errno, 42);
	EXPECT_EQ(err.olen, 7u);
	ASSERT_NE(err.err_data, nullptr);  // provider buffer when err_data_size is 0
	EXPECT_STREQ(static_cast<const char *>(err.err_data), "detail");
	EXPECT_EQ(err.err_data_size, 7u);
	EXPECT_EQ(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);

	ASSERT_EQ(fi_cq_read(cq, entries, 4), 1);
	EXPECT_EQ(entries[0].op_context, &c);
	EXPECT_NE(fi_cq_strerror(cq, ENOENT, nullptr, nullptr, 0), nullptr);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqReaderrCopiesIntoUserBuffer)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	object_of(cq)->write_error(error_entry(nullptr, FI_EIO, "0123456789"));
	char user[4];
	struct fi_cq_err_entry err{};
	err.err_data = user;
	err.err_data_size = sizeof(user);
	ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
	EXPECT_EQ(err.err_data, user);
	EXPECT_EQ(err.err_data_size, sizeof(user));
	EXPECT_EQ(std::memcmp(user, "0123", 4), 0);
	EXPECT_EQ(fi_cq_readerr(cq, &err, 1), -FI_EBADFLAGS);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

class OldApiFixture : public Fixture {
protected:
	void SetUp() override { open(FI_VERSION(1, 4), FI_THREAD_SAFE, FI_PROGRESS_MANUAL); }
};

TEST_F(OldApiFixture, CqReaderrCopiesTheShortStruct)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	object_of(cq)->write_error(error_entry(nullptr, FI_EIO, "x"));
	struct fi_cq_err_entry err;
	std::memset(&err, 0xcd, sizeof(err));
	ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
	EXPECT_EQ(err.err, FI_EIO);
	// A 1.4 application's struct ends before err_data_size: it must not be written.
	EXPECT_EQ(err.err_data_size, static_cast<size_t>(0xcdcdcdcdcdcdcdcdULL));
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(OldApiFixture, EqReaderrCopiesTheShortStruct)
{
	struct fi_eq_attr attr{};
	struct fid_eq *eq;
	ASSERT_EQ(fi_eq_open(fabric, &attr, &eq, nullptr), 0);
	auto *object = util::fid_cast<util::EventQueue>(&eq->fid, FI_CLASS_EQ);
	ASSERT_EQ(object->write_error(&eq->fid, nullptr, 0, FI_EIO, 5, "ab", 3), 0);
	struct fi_eq_err_entry err;
	std::memset(&err, 0xcd, sizeof(err));
	EXPECT_EQ(fi_eq_readerr(eq, &err, 0),
		  static_cast<ssize_t>(offsetof(struct fi_eq_err_entry, err_data_size)));
	EXPECT_EQ(err.err, FI_EIO);
	EXPECT_STREQ(static_cast<const char *>(err.err_data), "ab");
	EXPECT_EQ(err.err_data_size, static_cast<size_t>(0xcdcdcdcdcdcdcdcdULL));
	EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST_F(Fixture, CqOverrunKeepsEveryCompletion)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 4);
	util::CompletionQueue *q = object_of(cq);
	int contexts[10];
	for (int &c : contexts)
		q->write(&c, FI_SEND);
	EXPECT_EQ(q->overruns(), 6u);
	EXPECT_EQ(q->space(), 0u);
	struct fi_cq_entry entries[3];
	int seen = 0;
	ssize_t n;
	while ((n = fi_cq_read(cq, entries, 3)) > 0) {
		for (ssize_t i = 0; i < n; ++i)
			EXPECT_EQ(entries[i].op_context, &contexts[seen + i]);
		seen += static_cast<int>(n);
	}
	EXPECT_EQ(n, -FI_EAGAIN);
	EXPECT_EQ(seen, 10);
	EXPECT_EQ(q->space(), 4u);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

// queued() is the lock-free count fi_cq_read checks before it progresses: it must follow
// every entry in and out, the overflow list and error entries included.
TEST_F(Fixture, CqQueuedFollowsEveryEntry)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 4);
	util::CompletionQueue *q = object_of(cq);
	EXPECT_EQ(q->queued(), 0u);
	int contexts[10];
	for (int &c : contexts)
		q->write(&c, FI_SEND);
	EXPECT_EQ(q->queued(), 10u); // 4 in the ring, 6 in the overflow list
	struct fi_cq_entry entries[3];
	ASSERT_EQ(fi_cq_read(cq, entries, 3), 3);
	EXPECT_EQ(q->queued(), 7u);
	q->write_error(error_entry(nullptr, FI_EIO, "x"));
	EXPECT_EQ(q->queued(), 8u);
	ssize_t n;
	while ((n = fi_cq_read(cq, entries, 3)) > 0)
		;
	EXPECT_EQ(n, -FI_EAVAIL);
	EXPECT_EQ(q->queued(), 1u);
	struct fi_cq_err_entry err{};
	ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
	EXPECT_EQ(q->queued(), 0u);
	EXPECT_EQ(fi_cq_read(cq, entries, 3), -FI_EAGAIN);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

// The ring's slots are written in place: a slot that held an error entry must hold a plain
// one after the error was read (its detail goes with the readerr).
TEST_F(Fixture, CqSlotOfAReadErrorTakesAPlainEntry)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 2);
	util::CompletionQueue *q = object_of(cq);
	q->write_error(error_entry(nullptr, FI_EIO, "x")); // slot 0
	struct fi_cq_err_entry err{};
	ASSERT_EQ(fi_cq_readerr(cq, &err, 0), 1);
	int contexts[4];
	struct fi_cq_entry entries[2];
	for (int round = 0; round < 2; ++round) { // slots 1 and 0, then 1 and 0 again
		q->write(&contexts[2 * round], FI_SEND);
		q->write(&contexts[2 * round + 1], FI_SEND);
		ASSERT_EQ(fi_cq_read(cq, entries, 2), 2) << "round " << round;
		EXPECT_EQ(entries[0].op_context, &contexts[2 * round]);
		EXPECT_EQ(entries[1].op_context, &contexts[2 * round + 1]);
	}
	EXPECT_EQ(fi_cq_read(cq, entries, 2), -FI_EAGAIN);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqReadfromReportsSourceAddresses)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_MSG);
	object_of(cq)->write(nullptr, FI_RECV, 1, nullptr, 0, 0, 5);
	object_of(cq)->write(nullptr, FI_RECV, 1);
	struct fi_cq_msg_entry entries[2];
	fi_addr_t sources[2] = {0, 0};
	ASSERT_EQ(fi_cq_readfrom(cq, entries, 2, sources), 2);
	EXPECT_EQ(sources[0], 5u);
	EXPECT_EQ(sources[1], FI_ADDR_NOTAVAIL);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqSreadTimesOut)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	struct fi_cq_entry entry;
	auto start = Clock::now();
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 50), -FI_EAGAIN);
	auto elapsed = Clock::now() - start;
	EXPECT_GE(elapsed, std::chrono::milliseconds(45));
	EXPECT_LT(elapsed, std::chrono::milliseconds(1000));
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqSreadWakesOnCompletionFromAnotherThread)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	int context;
	std::thread writer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		util::LockGuard guard(domain_object->lock());
		object_of(cq)->write(&context, FI_SEND);
	});
	struct fi_cq_entry entry;
	auto start = Clock::now();
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 5000), 1);
	EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2000));
	EXPECT_EQ(entry.op_context, &context);
	writer.join();
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqSignalInterruptsSread)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	std::thread signaller([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		EXPECT_EQ(fi_cq_signal(cq), 0);
	});
	struct fi_cq_entry entry;
	auto start = Clock::now();
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, -1), -FI_EAGAIN);
	EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2000));
	signaller.join();
	// The signal was consumed: the next sread waits again.
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 20), -FI_EAGAIN);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqYieldWaitObjectAllowsSread)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 0, FI_WAIT_YIELD);
	ASSERT_NE(cq, nullptr);
	struct fi_cq_entry entry;
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 10), -FI_EAGAIN);
	int fd;
	EXPECT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	struct fi_cq_attr attr{};
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	EXPECT_EQ(fi_cq_open(domain, &attr, &cq, nullptr), -FI_ENOSYS);
}

TEST_F(Fixture, CqSreadNeedsAWaitObject)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 0, FI_WAIT_NONE);
	struct fi_cq_entry entry;
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 10), -FI_ENOSYS);
	int fd;
	EXPECT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqWaitFdIsPollableAndTrywaitWorks)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 0, FI_WAIT_FD);
	int fd = -1;
	ASSERT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	ASSERT_GE(fd, 0);
	enum fi_wait_obj obj;
	ASSERT_EQ(fi_control(&cq->fid, FI_GETWAITOBJ, &obj), 0);
	EXPECT_EQ(obj, FI_WAIT_FD);

	struct fid *fids[] = {&cq->fid};
	EXPECT_EQ(fi_trywait(fabric, fids, 1), 0);  // nothing pending: the app may block
	struct pollfd pfd = {fd, POLLIN, 0};
	EXPECT_EQ(poll(&pfd, 1, 0), 0);

	object_of(cq)->write(nullptr, FI_SEND);
	EXPECT_EQ(poll(&pfd, 1, 1000), 1);
	EXPECT_EQ(fi_trywait(fabric, fids, 1), -FI_EAGAIN);

	struct fi_cq_entry entry;
	EXPECT_EQ(fi_cq_read(cq, &entry, 1), 1);
	EXPECT_EQ(poll(&pfd, 1, 0), 0);  // drained: not readable any more
	EXPECT_EQ(fi_trywait(fabric, fids, 1), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, CqReadArgumentsAreChecked)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);
	object_of(cq)->write(nullptr, FI_SEND);
	EXPECT_EQ(fi_cq_read(cq, nullptr, 1), -FI_EINVAL);
	EXPECT_EQ(fi_cq_read(cq, nullptr, 0), 0);  // count 0 only drives progress
	EXPECT_EQ(fi_cq_readerr(cq, nullptr, 0), -FI_EINVAL);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

} // namespace

namespace {

// Two producer threads racing a blocking consumer through a small ring: nothing is lost or
// duplicated, and the consumer never hangs.
TEST_F(Fixture, CqConcurrentWritersAndBlockingReader)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_DATA, 16);
	util::CompletionQueue *q = object_of(cq);
	constexpr int kPerWriter = 5000;
	auto producer = [&](uint64_t base) {
		for (int i = 0; i < kPerWriter; ++i) {
			util::LockGuard guard(domain_object->lock());
			q->write(nullptr, FI_RECV, 0, nullptr, base + i);
		}
	};
	std::thread a(producer, 0), b(producer, 1000000);
	std::vector<int> seen_a(kPerWriter), seen_b(kPerWriter);
	int received = 0;
	struct fi_cq_data_entry entries[8];
	while (received < 2 * kPerWriter) {
		ssize_t n = fi_cq_sread(cq, entries, 8, nullptr, 5000);
		ASSERT_GT(n, 0) << "after " << received;
		for (ssize_t i = 0; i < n; ++i) {
			uint64_t data = entries[i].data;
			if (data >= 1000000)
				++seen_b.at(data - 1000000);
			else
				++seen_a.at(data);
		}
		received += static_cast<int>(n);
	}
	a.join();
	b.join();
	for (int i = 0; i < kPerWriter; ++i) {
		EXPECT_EQ(seen_a[i], 1);
		EXPECT_EQ(seen_b[i], 1);
	}
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

// FI_THREAD_SAFE: writers and readers meet only at the CQ's own lock (no domain lock
// around the writes), two of each, the ring small enough to overflow now and then: every
// entry is read exactly once, in each writer's order.
TEST_F(Fixture, CqConcurrentWritersAndReadersShareTheCqLock)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_DATA, 8, FI_WAIT_NONE);
	util::CompletionQueue *q = object_of(cq);
	constexpr int kPerWriter = 20000;
	auto producer = [&](uint64_t base) {
		for (int i = 0; i < kPerWriter; ++i)
			q->write(nullptr, FI_RECV, 0, nullptr, base + i);
	};
	std::atomic<int> received{0};
	std::vector<std::atomic<int>> seen(2 * kPerWriter);
	std::atomic<bool> out_of_order{false};
	auto consumer = [&]() {
		struct fi_cq_data_entry entries[4];
		uint64_t last[2] = {0, 0};
		bool any[2] = {false, false};
		while (received.load() < 2 * kPerWriter) {
			ssize_t n = fi_cq_read(cq, entries, 4);
			if (n == -FI_EAGAIN)
				continue;
			ASSERT_GT(n, 0);
			for (ssize_t i = 0; i < n; ++i) {
				uint64_t data = entries[i].data;
				int writer = data >= kPerWriter ? 1 : 0;
				uint64_t index = data - (writer ? kPerWriter : 0);
				if (any[writer] && index <= last[writer])
					out_of_order = true; // one reader sees a writer's entries in order
				any[writer] = true;
				last[writer] = index;
				seen.at(data)++;
			}
			received += static_cast<int>(n);
		}
	};
	std::thread w1(producer, 0), w2(producer, kPerWriter), r1(consumer), r2(consumer);
	w1.join();
	w2.join();
	r1.join();
	r2.join();
	EXPECT_EQ(received.load(), 2 * kPerWriter);
	EXPECT_FALSE(out_of_order.load());
	for (int i = 0; i < 2 * kPerWriter; ++i)
		ASSERT_EQ(seen[i].load(), 1) << "entry " << i;
	EXPECT_EQ(q->queued(), 0u);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

// util::Lock, real: recursive for its owner, exclusive between threads (the owner is told
// apart by its thread pointer).
TEST(UtilLock, RecursiveForItsOwnerExclusiveBetweenThreads)
{
	util::Lock lock(util::Lock::Kind::Mutex);
	long counter = 0;
	auto work = [&]() {
		for (int i = 0; i < 100000; ++i) {
			util::LockGuard outer(lock);
			util::LockGuard inner(lock); // the owner enters again
			++counter;
		}
	};
	std::thread a(work), b(work);
	a.join();
	b.join();
	EXPECT_EQ(counter, 200000);
	std::atomic<bool> taken{false};
	{
		util::LockGuard guard(lock);
		std::thread other([&] { taken = lock.try_lock(); if (taken) lock.unlock(); });
		other.join();
	}
	EXPECT_FALSE(taken.load());
	EXPECT_TRUE(lock.try_lock());
	lock.unlock();
}

// The CQ's short sections (lock_free_only ... unlock_free_only, which record no owner)
// mixed with the usual recursive lock: exclusive both ways, a waiter is woken by either
// release, and a free-only section is never taken over a holder, this thread included.
TEST(UtilLock, FreeOnlySectionsMixWithTheUsualLock)
{
	util::Lock lock(util::Lock::Kind::Mutex);
	long counter = 0;
	auto free_only = [&]() {
		for (int i = 0; i < 100000; ++i) {
			if (lock.lock_free_only()) {
				++counter;
				lock.unlock_free_only();
			} else {
				util::LockGuard guard(lock); // the CQ's general path
				++counter;
			}
		}
	};
	auto usual = [&]() {
		for (int i = 0; i < 100000; ++i) {
			util::LockGuard outer(lock);
			util::LockGuard inner(lock);
			++counter;
		}
	};
	std::thread a(free_only), b(usual), c(free_only);
	a.join();
	b.join();
	c.join();
	EXPECT_EQ(counter, 300000);

	lock.lock();
	EXPECT_FALSE(lock.lock_free_only()) << "held by this thread: no recursion";
	lock.unlock();
	ASSERT_TRUE(lock.lock_free_only());
	std::atomic<bool> taken{false};
	std::thread other([&] { taken = lock.try_lock(); if (taken) lock.unlock(); });
	other.join();
	EXPECT_FALSE(taken.load()) << "a free-only holder excludes other threads";
	EXPECT_FALSE(lock.try_lock()) << "nor is it taken for this thread's own";
	lock.unlock_free_only();
	EXPECT_TRUE(lock.try_lock());
	lock.unlock();
}

} // namespace

namespace {

// A progress source writing one completion into a CQ on the pass it is told to.
class CompletingSource : public util::ProgressSource {
public:
	explicit CompletingSource(util::CompletionQueue *cq) : cq_(cq) {}
	void progress() override
	{
		++passes;
		if (complete_next) {
			complete_next = false;
			cq_->write(this, FI_RECV);
		}
	}
	int passes = 0;
	bool complete_next = false;

private:
	util::CompletionQueue *cq_;
};

} // namespace

// util/cq_progress_ops.h: the progress of a read without the read. It runs the domain's
// progress only while nothing is queued, answers whether a read would find something, and
// leaves the entries for fi_cq_read.
TEST_F(Fixture, CqProgressEntryRunsTheReadsProgressWithoutReading)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 0, FI_WAIT_NONE);
	ASSERT_NE(cq, nullptr);
	void *opened = nullptr;
	ASSERT_EQ(fi_open_ops(&cq->fid, OFI_CQ_PROGRESS_OPS_NAME, 0, &opened, nullptr), 0);
	auto *ops = static_cast<const ofi_cq_progress_ops *>(opened);
	ASSERT_EQ(ops->size, sizeof(ofi_cq_progress_ops));
	EXPECT_EQ(fi_open_ops(&cq->fid, "no_such_ops", 0, &opened, nullptr), -FI_ENOSYS);
	EXPECT_EQ(fi_open_ops(&cq->fid, OFI_CQ_PROGRESS_OPS_NAME, 1, &opened, nullptr),
		  -FI_EBADFLAGS);

	CompletingSource source(object_of(cq));
	ASSERT_EQ(domain_object->engine().add_source(&source), 0);
	EXPECT_EQ(ops->progress(cq), 0); // a pass, nothing written
	EXPECT_EQ(source.passes, 1);
	source.complete_next = true;
	EXPECT_EQ(ops->progress(cq), 1); // the pass wrote one
	EXPECT_EQ(source.passes, 2);
	EXPECT_EQ(ops->progress(cq), 1); // queued: no pass, as fi_cq_read would not run one
	EXPECT_EQ(source.passes, 2);
	struct fi_cq_entry entry;
	EXPECT_EQ(fi_cq_read(cq, &entry, 1), 1); // still there for the read
	EXPECT_EQ(entry.op_context, &source);
	EXPECT_EQ(ops->progress(cq), 0);
	EXPECT_EQ(source.passes, 3); // the read took the queued entry without a pass
	// An error entry is something a read returns (-FI_EAVAIL) too.
	object_of(cq)->write_error(error_entry(&source, FI_EIO, nullptr));
	EXPECT_EQ(ops->progress(cq), 1);
	domain_object->engine().remove_source(&source);

	EXPECT_EQ(ops->progress(nullptr), -FI_EINVAL);
	EXPECT_EQ(ops->progress(reinterpret_cast<struct fid_cq *>(domain)), -FI_EINVAL);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}
