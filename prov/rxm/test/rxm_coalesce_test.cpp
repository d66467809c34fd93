// Small sends of tcp;ofi_rxm in a burst: tcp sends the sends posted between two progress
// passes in one sendmsg at the next pass, but only those whose completion someone will come
// back for. So rxm injects the first small message after a pass (a ping-pong's) and those
// nobody waits for, and gives the rest of a burst to tcp by fi_send with a completion
// (RxmEndpoint::send_for_coalescing). Two promises: a window of sends costs a few sendmsg,
// not one each; and a send the application saw complete has left, even if the application
// never calls in again (it may wait on an out-of-band barrier next: fabtests' fi_tagged
// timed out when tcp held a message rxm had completed inside its call).
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "prov/rxm/test/rxm_test_connections.h"
#include "test/count_sendmsg.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using test_count::sendmsg_calls;

namespace {

using Node = rxm_test::ContextNode;

class RxmCoalesce : public rxm_test::TcpRxmConnections {
protected:
	void connect()
	{
		client = std::make_unique<Node>(info);
		server = std::make_unique<Node>(info);
		to_server = client->insert(*server);
		// One message first: the connection is up and the paths are warm.
		char in = 0, out = 1;
		ASSERT_EQ(0, fi_recv(server->ep, &in, 1, nullptr, FI_ADDR_UNSPEC, &in));
		ASSERT_EQ(0, fi_send(client->ep, &out, 1, nullptr, to_server, &out));
		ASSERT_TRUE(rxm_test::poll_until(std::vector<Node *>{client.get(), server.get()}, [&] {
			return client->done.size() == 1 && server->done.size() == 1;
		}));
		client->done.clear();
		server->done.clear();
	}
	void post_receives(size_t count)
	{
		in.assign(count, std::string(16, '\0'));
		for (auto &buf : in)
			ASSERT_EQ(0, fi_recv(server->ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC,
					     buf.data()));
	}

	std::unique_ptr<Node> client, server;
	fi_addr_t to_server = FI_ADDR_NOTAVAIL;
	std::vector<std::string> in;
};

TEST_F(RxmCoalesce, AWindowOfSmallSendsCostsAFewSendmsg)
{
	connect();
	constexpr size_t kWindow = 32;
	post_receives(kWindow);
	std::vector<std::string> out;
	for (size_t i = 0; i < kWindow; i++)
		out.push_back("message " + std::to_string(i));
	client->poll(); // a pass: the first send of the window is the first of a burst
	sendmsg_calls = 0;
	for (size_t i = 0; i < kWindow; i++)
		ASSERT_EQ(0, fi_send(client->ep, out[i].c_str(), out[i].size() + 1, nullptr,
				     to_server, &out[i]));
	client->poll(); // the pass that sends the burst
	EXPECT_LE(sendmsg_calls, 3) << "a window of " << kWindow << " small sends";
	ASSERT_TRUE(rxm_test::poll_until(std::vector<Node *>{client.get(), server.get()}, [&] {
		return client->done.size() == kWindow && server->done.size() == kWindow;
	}));
	for (size_t i = 0; i < kWindow; i++) {
		EXPECT_EQ(&out[i], client->done[i]);
		EXPECT_EQ(in[i].data(), server->done[i]);
		EXPECT_STREQ(out[i].c_str(), in[i].c_str());
	}
	EXPECT_EQ(0, client->failed + server->failed);
}

TEST_F(RxmCoalesce, ASendSeenCompleteHasLeftWithoutFurtherCalls)
{
	connect();
	constexpr size_t kCount = 8;
	post_receives(kCount);
	std::vector<std::string> out;
	for (size_t i = 0; i < kCount; i++)
		out.push_back("send " + std::to_string(i));
	// As fabtests' clients do: send, wait for its completion, send the next.
	for (size_t i = 0; i < kCount; i++) {
		ASSERT_EQ(0, fi_send(client->ep, out[i].c_str(), out[i].size() + 1, nullptr,
				     to_server, &out[i]));
		ASSERT_TRUE(rxm_test::poll_until(std::vector<Node *>{client.get()},
						 [&] { return client->done.size() == i + 1; }));
	}
	// The client is not called again: every message must reach the server anyway.
	EXPECT_TRUE(rxm_test::poll_until(std::vector<Node *>{server.get()},
					 [&] { return server->done.size() == kCount; },
					 std::chrono::seconds(5)))
	    << server->done.size() << " of " << kCount << " arrived";
	for (size_t i = 0; i < server->done.size(); i++)
		EXPECT_STREQ(out[i].c_str(), in[i].c_str());
}

TEST_F(RxmCoalesce, InjectsLeaveAtOnce)
{
	connect();
	constexpr size_t kCount = 8;
	post_receives(kCount);
	std::vector<std::string> out;
	for (size_t i = 0; i < kCount; i++)
		out.push_back("inject " + std::to_string(i));
	// No completion to come back for: each one leaves within its own call.
	for (size_t i = 0; i < kCount; i++)
		ASSERT_EQ(0, fi_inject(client->ep, out[i].c_str(), out[i].size() + 1, to_server));
	EXPECT_TRUE(rxm_test::poll_until(std::vector<Node *>{server.get()},
					 [&] { return server->done.size() == kCount; },
					 std::chrono::seconds(5)))
	    << server->done.size() << " of " << kCount << " arrived";
}

// Injects too large for tcp's own inject go to tcp by fi_send with a core completion, and
// back to back the second follows the first in one pass: tcp held it for the next pass,
// which never came when the application went on to an out-of-band barrier (fabtests'
// fi_msg_pingpong -c sread at 4 KiB timed out in the bench: the server's last reply).
TEST_F(RxmCoalesce, InjectsLargerThanTheCoresLeaveAtOnce)
{
	connect();
	size_t size = std::min<size_t>(info->tx_attr->inject_size, 4096);
	ASSERT_GT(size, 512u) << "rxm's inject size is the bounce buffer's, above tcp's";
	constexpr size_t kCount = 4;
	std::vector<std::string> in(kCount, std::string(size, '\0'));
	for (auto &buf : in)
		ASSERT_EQ(0, fi_recv(server->ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC,
				     buf.data()));
	std::vector<std::string> out;
	for (size_t i = 0; i < kCount; i++)
		out.push_back(std::string(size, static_cast<char>('a' + i)));
	for (size_t i = 0; i < kCount; i++)
		ASSERT_EQ(0, fi_inject(client->ep, out[i].data(), size, to_server));
	// The client is not called again.
	EXPECT_TRUE(rxm_test::poll_until(std::vector<Node *>{server.get()},
					 [&] { return server->done.size() == kCount; },
					 std::chrono::seconds(5)))
	    << server->done.size() << " of " << kCount << " arrived";
	for (size_t i = 0; i < server->done.size(); i++)
		EXPECT_EQ(out[i], in[i]);
}

} // namespace
