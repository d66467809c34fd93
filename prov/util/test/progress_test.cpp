// Progress engine: fd handlers and sources run on CQ reads, blocking reads wake on a
// registered fd, auto progress runs without the application, selective completion.
#include "prov/util/test/fake_provider.h"

#include <chrono>
#include <fcntl.h>
#include <sys/epoll.h>
#include <thread>
#include <unistd.h>

namespace {

using fake::Fixture;

// Turns every byte arriving on a pipe into a completion on 'cq'.
class PipeToCq : public util::FdHandler, public util::ProgressSource {
public:
	PipeToCq(util::CompletionQueue *cq) : cq_(cq)
	{
		if (pipe(fds_))
			throw std::runtime_error("pipe");
	}
	~PipeToCq() override
	{
		::close(fds_[0]);
		::close(fds_[1]);
	}
	void on_fd_ready(int fd, uint32_t events) override
	{
		EXPECT_EQ(fd, fds_[0]);
		EXPECT_TRUE(events & EPOLLIN);
		char byte;
		while (::read(fd, &byte, 1) == 1)
			cq_->write(nullptr, FI_RECV, static_cast<size_t>(byte));
	}
	void progress() override { ++passes; }
	void poke(char byte) { ASSERT_EQ(::write(fds_[1], &byte, 1), 1); }
	int read_fd() const { return fds_[0]; }
	int passes = 0;

private:
	util::CompletionQueue *cq_;
	int fds_[2];
};

util::CompletionQueue *object_of(struct fid_cq *cq)
{
	return util::fid_cast<util::CompletionQueue>(&cq->fid, FI_CLASS_CQ);
}

TEST_F(Fixture, CqReadDrivesRegisteredFdsAndSources)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_MSG);
	PipeToCq pipe_handler(object_of(cq));
	util::ProgressEngine &engine = domain_object->engine();
	ASSERT_EQ(fcntl(pipe_handler.read_fd(), F_SETFL, O_NONBLOCK), 0);
	ASSERT_EQ(engine.add_fd(pipe_handler.read_fd(), EPOLLIN, &pipe_handler), 0);
	EXPECT_EQ(engine.add_fd(pipe_handler.read_fd(), EPOLLIN, &pipe_handler), -FI_EALREADY);
	ASSERT_EQ(engine.add_source(&pipe_handler), 0);

	struct fi_cq_msg_entry entry;
	EXPECT_EQ(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);
	EXPECT_EQ(pipe_handler.passes, 1);
	pipe_handler.poke(5);
	ASSERT_EQ(fi_cq_read(cq, &entry, 1), 1);
	EXPECT_EQ(entry.len, 5u);

	// A blocked sread sleeps on the engine fd and wakes when the pipe becomes readable.
	std::thread poker([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		pipe_handler.poke(9);
	});
	ASSERT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 5000), 1);
	EXPECT_EQ(entry.len, 9u);
	poker.join();

	engine.remove_source(&pipe_handler);
	EXPECT_EQ(engine.remove_fd(pipe_handler.read_fd()), 0);
	EXPECT_EQ(engine.remove_fd(pipe_handler.read_fd()), -FI_ENOENT);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

class AutoProgressFixture : public Fixture {
protected:
	void SetUp() override { open(FI_VERSION(1, 17), FI_THREAD_SAFE, FI_PROGRESS_AUTO); }
};

TEST_F(AutoProgressFixture, ThreadProgressesWithoutReads)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_MSG);
	PipeToCq pipe_handler(object_of(cq));
	ASSERT_EQ(fcntl(pipe_handler.read_fd(), F_SETFL, O_NONBLOCK), 0);
	ASSERT_TRUE(domain_object->engine().thread_running());
	ASSERT_EQ(domain_object->engine().add_fd(pipe_handler.read_fd(), EPOLLIN, &pipe_handler),
		  0);
	pipe_handler.poke(3);
	// Wait for the completion without calling into the CQ (which would progress).
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
	while (object_of(cq)->space() == util::CompletionQueue::kDefaultSize &&
	       std::chrono::steady_clock::now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	EXPECT_EQ(object_of(cq)->space(), util::CompletionQueue::kDefaultSize - 1);
	EXPECT_EQ(domain_object->engine().remove_fd(pipe_handler.read_fd()), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, SelectiveCompletionFollowsOpFlags)
{
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_MSG);
	struct fid_ep *ep = open_ep();
	ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_SELECTIVE_COMPLETION), 0);
	ASSERT_EQ(fi_enable(ep), 0);
	EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_RECV), -FI_EOPBADSTATE);  // after enable
	char byte = 0;
	struct fi_cq_msg_entry entry;
	EXPECT_EQ(fi_send(ep, &byte, 1, nullptr, 0, nullptr), 0);
	EXPECT_EQ(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);  // no FI_COMPLETION: no entry

	struct iovec iov = {&byte, 1};
	struct fi_msg msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.context = &byte;
	EXPECT_EQ(fi_sendmsg(ep, &msg, FI_COMPLETION), 0);
	ASSERT_EQ(fi_cq_read(cq, &entry, 1), 1);
	EXPECT_EQ(entry.op_context, &byte);

	// FI_SETOPSFLAG makes FI_COMPLETION the default for plain sends.
	uint64_t flags = FI_TRANSMIT | FI_COMPLETION;
	ASSERT_EQ(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_TRANSMIT;
	ASSERT_EQ(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), 0);
	EXPECT_TRUE(flags & FI_COMPLETION);
	EXPECT_EQ(fi_send(ep, &byte, 1, nullptr, 0, nullptr), 0);
	EXPECT_EQ(fi_cq_read(cq, &entry, 1), 1);
	EXPECT_EQ(fi_close(&ep->fid), 0);
	EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Fixture, EndpointOptions)
{
	struct fid_ep *ep = open_ep();
	size_t value = 512, len = sizeof(value);
	EXPECT_EQ(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &value, sizeof(value)),
		  0);
	value = 0;
	EXPECT_EQ(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &value, &len), 0);
	EXPECT_EQ(value, 512u);
	EXPECT_EQ(fi_getopt(&ep->fid, FI_OPT_ENDPOINT, 9999, &value, &len), -FI_ENOPROTOOPT);
	EXPECT_EQ(fi_close(&ep->fid), 0);
}

} // namespace
