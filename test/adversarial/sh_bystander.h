// A bystander process for the same-host tests: a child forked before any socket of the test
// existed, holding a token and a secret at addresses the parent knows (fork keeps the
// layout; the parent's copies stay zero). Killed when the object goes.
#pragma once

#include "prov/rxm/rxm_cma.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace sh {

inline constexpr char kSecret[] = "bystander secret: 0123456789abcdef-0123456!";
alignas(64) inline volatile uint8_t g_bystander_token[rxm::kCmaTokenSize];
alignas(64) inline volatile uint8_t g_bystander_secret[sizeof(kSecret)];

inline uint8_t bystander_token_byte(size_t i) { return static_cast<uint8_t>(0xa0 + i); }

class Bystander {
public:
	Bystander()
	{
		int ready[2], stop[2];
		if (pipe(ready) || pipe(stop))
			return;
		pid_ = fork();
		if (pid_ == 0) {
			close(ready[0]);
			close(stop[1]);
			for (size_t i = 0; i < sizeof(g_bystander_token); i++)
				g_bystander_token[i] = bystander_token_byte(i);
			for (size_t i = 0; i < sizeof(g_bystander_secret); i++)
				g_bystander_secret[i] = static_cast<uint8_t>(kSecret[i]);
			char c = 1;
			if (write(ready[1], &c, 1) != 1)
				_exit(1);
			alarm(120); // never outlives a test run, whatever happens to the parent
			(void)!read(stop[0], &c, 1); // returns when the parent closes its end
			_exit(0);
		}
		close(ready[1]);
		close(stop[0]);
		stop_fd_ = stop[1];
		char c;
		ok_ = pid_ > 0 && read(ready[0], &c, 1) == 1;
		close(ready[0]);
	}
	~Bystander()
	{
		if (stop_fd_ >= 0)
			close(stop_fd_);
		if (pid_ > 0) {
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
	}
	bool ok() const { return ok_; }
	pid_t pid() const { return pid_; }

private:
	pid_t pid_ = -1;
	int stop_fd_ = -1;
	bool ok_ = false;
};

} // namespace sh
