#include "test/adversarial/accept_legit_client.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>

namespace adversarial {

ClientOutcome serve_legit_client(RdmPeer &server, uint32_t count, int seconds,
				 const std::function<void()> &each_pass)
{
	ClientOutcome outcome;
	std::vector<char> server_name = server.name();
	server.reset_series();
	size_t received_before = server.received(), bad_before = server.bad();
	auto start = std::chrono::steady_clock::now();
	pid_t pid = fork();
	if (pid == 0) {
		rlimit limit{};
		getrlimit(RLIMIT_NOFILE, &limit);
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
		RdmPeer client("127.0.0.1");
		if (!client.ok() || !client.send_series(server_name, count, seconds)) {
			fprintf(stderr, "legit client: %s\n", client.error().c_str());
			_exit(1);
		}
		_exit(0);
	}
	if (pid < 0)
		return outcome;
	auto deadline = start + std::chrono::seconds(seconds + 2);
	bool exited = false;
	while (std::chrono::steady_clock::now() < deadline) {
		server.serve_once();
		if (each_pass)
			each_pass();
		int status = 0;
		if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
			exited = true;
			outcome.client_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
		}
		if (server.received() - received_before >= count && exited)
			break;
	}
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
	}
	outcome.received = server.received() - received_before;
	outcome.bad = server.bad() - bad_before;
	outcome.seconds =
		std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	return outcome;
}

} // namespace adversarial
