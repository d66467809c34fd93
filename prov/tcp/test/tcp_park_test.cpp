// Parking a message stalled on a shared receive (tcp_connection_park.cpp): two streams take
// from one shared queue holding a single receive; the peers' bytes are written by hand so a
// message can stop anywhere. A stalled holder gives the receive to the other stream and later
// completes its own message intact; a holder with data waiting is never parked.
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/tcp_wire.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace tcp;

namespace {

struct Received {
	void *context;
	size_t len;
	int err;
	std::vector<uint8_t> bytes;
};

class RecordingOwner : public ConnectionOwner {
public:
	void tx_done(void *, uint64_t, uint64_t, size_t, int) override {}
	void rx_done(void *context, uint64_t, uint64_t, void *buf, size_t len, uint64_t, int err,
		     size_t) override
	{
		const auto *p = static_cast<const uint8_t *>(buf);
		rx.push_back({context, len, err, std::vector<uint8_t>(p, p + len)});
	}
	void remote_done(uint64_t) override {}
	int remote_access(uint64_t, uint64_t, uint64_t, uint64_t, uint8_t **, uint64_t *) override
	{
		return -FI_EACCES;
	}
	bool region_alive(uint64_t, uint64_t) override { return false; }
	void connection_lost(int err) override { lost.push_back(err); }
	void rx_starved() override { starved++; }

	std::vector<Received> rx;
	std::vector<int> lost;
	int starved = 0;
};

std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
	std::vector<uint8_t> v(len);
	for (size_t i = 0; i < len; i++)
		v[i] = uint8_t(seed + i * 13);
	return v;
}

class ParkTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		Limits limits;
		limits.tx_size = 4;
		limits.rx_size = 4;
		for (int i = 0; i < 2; i++) {
			int sv[2];
			ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
			fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
			conn[i] = std::make_unique<Connection>(owner[i], limits);
			conn[i]->use_shared_rx(&shared);
			conn[i]->attach(sv[0]);
			peer[i] = sv[1];
		}
	}
	void TearDown() override
	{
		for (int fd : peer)
			close(fd);
	}
	void post()
	{
		iovec iov{buffer.data(), buffer.size()};
		ASSERT_EQ(0, shared.post(&iov, 1, buffer.data(), 0));
	}
	// Writes the header of a `size`-byte message and its first `first` bytes.
	void send_start(int i, const std::vector<uint8_t> &message, size_t first)
	{
		WireHeader h;
		h.op = WireOp::msg;
		h.size = message.size();
		uint8_t bytes[kWireHeaderSize];
		encode_header(h, bytes);
		ASSERT_EQ(ssize_t(sizeof(bytes)), write(peer[i], bytes, sizeof(bytes)));
		if (first) {
			ASSERT_EQ(ssize_t(first), write(peer[i], message.data(), first));
		}
	}
	void send_rest(int i, const std::vector<uint8_t> &message, size_t from)
	{
		ASSERT_EQ(ssize_t(message.size() - from),
			  write(peer[i], message.data() + from, message.size() - from));
	}

	RxQueue shared{4};
	std::vector<uint8_t> buffer = std::vector<uint8_t>(16384);
	RecordingOwner owner[2];
	std::unique_ptr<Connection> conn[2];
	int peer[2] = {-1, -1};
};

TEST_F(ParkTest, StalledHolderGivesItsReceiveAndResumesIntact)
{
	std::vector<uint8_t> slow = pattern(9000, 1), quick = pattern(700, 99);
	post();
	send_start(0, slow, 5000); // more than the 4 KiB stage: read straight into the buffer
	conn[0]->progress_rx();
	ASSERT_TRUE(shared.empty()); // taken by stream 0, which now waits for the rest

	send_start(1, quick, quick.size());
	conn[1]->progress_rx();
	ASSERT_EQ(1u, owner[1].rx.size()) << "the stalled holder kept the only receive";
	EXPECT_EQ(quick, owner[1].rx[0].bytes);
	EXPECT_EQ(0, owner[1].rx[0].err);

	// Parked, stream 0 does not take the reposted receive while it has nothing to read.
	post();
	conn[0]->progress_rx();
	EXPECT_FALSE(shared.empty());
	EXPECT_TRUE(owner[0].rx.empty());

	send_rest(0, slow, 5000);
	conn[0]->progress_rx();
	ASSERT_EQ(1u, owner[0].rx.size());
	EXPECT_EQ(0, owner[0].rx[0].err);
	EXPECT_EQ(slow, owner[0].rx[0].bytes) << "the parked bytes did not come back intact";
	EXPECT_TRUE(owner[0].lost.empty());
}

TEST_F(ParkTest, AHeaderWithNoPayloadYetCountsAsStalled)
{
	std::vector<uint8_t> slow = pattern(100, 7), quick = pattern(10, 3);
	post();
	send_start(0, slow, 0);
	conn[0]->progress_rx();
	send_start(1, quick, quick.size());
	conn[1]->progress_rx();
	ASSERT_EQ(1u, owner[1].rx.size());
	EXPECT_EQ(quick, owner[1].rx[0].bytes);
	post();
	send_rest(0, slow, 0);
	conn[0]->progress_rx();
	ASSERT_EQ(1u, owner[0].rx.size());
	EXPECT_EQ(slow, owner[0].rx[0].bytes);
}

TEST_F(ParkTest, HolderWithDataWaitingIsNotParked)
{
	std::vector<uint8_t> slow = pattern(2000, 5), quick = pattern(10, 3);
	post();
	send_start(0, slow, 600);
	conn[0]->progress_rx();
	send_rest(0, slow, 600); // unread: stream 0 is not stalled, just not progressed yet
	send_start(1, quick, quick.size());
	conn[1]->progress_rx();
	EXPECT_TRUE(owner[1].rx.empty());
	EXPECT_EQ(1, owner[1].starved); // waits for a post, like any message without a receive
	conn[0]->progress_rx();
	ASSERT_EQ(1u, owner[0].rx.size());
	EXPECT_EQ(slow, owner[0].rx[0].bytes);
	post();
	conn[1]->progress_rx();
	ASSERT_EQ(1u, owner[1].rx.size());
	EXPECT_EQ(quick, owner[1].rx[0].bytes);
}

TEST_F(ParkTest, ParkedStreamWithDataWaitsForAPostWithoutSpinning)
{
	std::vector<uint8_t> slow = pattern(800, 9), quick = pattern(2000, 4);
	post();
	send_start(0, slow, 100);
	conn[0]->progress_rx();
	send_start(1, quick, 1000); // takes the receive from stream 0, then stalls itself
	conn[1]->progress_rx();
	send_rest(0, slow, 100);
	// Stream 1 has nothing to read now: stream 0 takes the receive back from it.
	conn[0]->progress_rx();
	ASSERT_EQ(1u, owner[0].rx.size());
	EXPECT_EQ(slow, owner[0].rx[0].bytes);
	// Both parked or done; stream 1's data arrives with no receive free: it stops reading.
	send_rest(1, quick, 1000);
	conn[1]->progress_rx();
	EXPECT_TRUE(conn[1]->rx_paused());
	EXPECT_GE(owner[1].starved, 1);
	post();
	conn[1]->progress_rx();
	ASSERT_EQ(1u, owner[1].rx.size());
	EXPECT_EQ(quick, owner[1].rx[0].bytes);
}

TEST_F(ParkTest, ParkedStreamClosingLeavesTheQueueWhole)
{
	std::vector<uint8_t> slow = pattern(500, 2), quick = pattern(10, 1);
	post();
	send_start(0, slow, 50);
	conn[0]->progress_rx();
	send_start(1, quick, quick.size());
	conn[1]->progress_rx();
	ASSERT_EQ(1u, owner[1].rx.size());
	post();
	close(peer[0]);
	peer[0] = -1;
	conn[0]->progress_rx();
	EXPECT_EQ(1u, owner[0].lost.size());
	EXPECT_TRUE(owner[0].rx.empty());
	EXPECT_FALSE(shared.empty()); // the receive is still there for others
}

} // namespace
