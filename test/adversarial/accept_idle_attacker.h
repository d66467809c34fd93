// An attacker process for the accept_ tests: it opens TCP connections to a listener from
// chosen source addresses (127.0.0.x) and never sends a byte on them. With `reconnect` it
// opens a new one for every one the server closes, holding its number up for as long as it
// runs. It is a forked child, so its fds do not count against the server's limit.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace adversarial {

class IdleAttacker {
public:
	IdleAttacker(int port, std::vector<std::string> sources, int per_source, bool reconnect);
	~IdleAttacker();
	IdleAttacker(const IdleAttacker &) = delete;
	IdleAttacker &operator=(const IdleAttacker &) = delete;

	bool ok() const { return pid_ > 0; }
	// Starts connecting; true once every first connection is established (or false after
	// `seconds`).
	bool start(int seconds);
	// How many of its connections the server has closed so far (-1 on failure).
	int closed_by_server();
	// Closes everything and ends the process.
	void leave();

private:
	pid_t pid_ = -1;
	int command_fd_ = -1; // parent -> child
	int report_fd_ = -1;  // child -> parent
};

} // namespace adversarial
