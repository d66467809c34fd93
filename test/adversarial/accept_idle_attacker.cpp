#include "test/adversarial/accept_idle_attacker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace adversarial {

namespace {

struct Slot {
	int fd = -1;
	std::string source;
	bool closed = false; // by the server (seen as EOF or reset)
};

int open_from(const std::string &source, int port, bool blocking)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);
	if (fd < 0)
		return -1;
	sockaddr_in src{};
	src.sin_family = AF_INET;
	inet_pton(AF_INET, source.c_str(), &src.sin_addr);
	sockaddr_in dst{};
	dst.sin_family = AF_INET;
	dst.sin_port = htons(uint16_t(port));
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	timeval bound{2, 0}; // a blocking connect must not hang the test
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof(bound));
	if (bind(fd, reinterpret_cast<sockaddr *>(&src), sizeof(src)) != 0 ||
	    (connect(fd, reinterpret_cast<sockaddr *>(&dst), sizeof(dst)) != 0 &&
	     errno != EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd; // reads use MSG_DONTWAIT, so a blocking socket is fine
}

// The server closed it: EOF or an error (a reset); data would be a protocol surprise and
// counts as still open.
bool server_closed(int fd)
{
	char byte;
	ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

[[noreturn]] void run_child(int port, const std::vector<std::string> &sources, int per_source,
			    bool reconnect, int command_fd, int report_fd)
{
	rlimit limit{};
	getrlimit(RLIMIT_NOFILE, &limit);
	limit.rlim_cur = limit.rlim_max; // the server may have lowered its own
	setrlimit(RLIMIT_NOFILE, &limit);
	char command;
	if (read(command_fd, &command, 1) != 1)
		_exit(1);
	std::vector<Slot> slots;
	for (const std::string &source : sources)
		for (int i = 0; i < per_source; ++i)
			slots.push_back(Slot{open_from(source, port, true), source, false});
	char connected = 'C';
	for (const Slot &s : slots)
		if (s.fd < 0)
			connected = 'F';
	if (write(report_fd, &connected, 1) != 1)
		_exit(1);
	std::vector<pollfd> fds;
	for (;;) {
		fds.clear();
		fds.push_back(pollfd{command_fd, POLLIN, 0});
		for (const Slot &s : slots)
			fds.push_back(pollfd{s.closed ? -1 : s.fd, POLLIN, 0});
		if (poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR)
			_exit(1);
		if (fds[0].revents) {
			if (read(command_fd, &command, 1) != 1 || command == 'L')
				break;
			int closed = 0;
			for (const Slot &s : slots)
				closed += s.closed;
			if (write(report_fd, &closed, sizeof(closed)) != sizeof(closed))
				_exit(1);
		}
		for (size_t i = 0; i < slots.size(); ++i) {
			Slot &s = slots[i];
			if (s.closed || s.fd < 0 || !fds[i + 1].revents || !server_closed(s.fd))
				continue;
			s.closed = true;
			if (reconnect) {
				close(s.fd);
				s.fd = open_from(s.source, port, false);
				s.closed = s.fd < 0;
			}
		}
		if (reconnect)
			usleep(5000); // a steady stream of reconnects, not a CPU hog on a shared box
	}
	for (const Slot &s : slots)
		if (s.fd >= 0)
			close(s.fd);
	_exit(0);
}

} // namespace

IdleAttacker::IdleAttacker(int port, std::vector<std::string> sources, int per_source,
			   bool reconnect)
{
	int to_child[2], to_parent[2];
	if (pipe2(to_child, O_CLOEXEC) != 0)
		return;
	if (pipe2(to_parent, O_CLOEXEC) != 0) {
		close(to_child[0]);
		close(to_child[1]);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		run_child(port, sources, per_source, reconnect, to_child[0], to_parent[1]);
	}
	close(to_child[0]);
	close(to_parent[1]);
	if (pid < 0) {
		close(to_child[1]);
		close(to_parent[0]);
		return;
	}
	pid_ = pid;
	command_fd_ = to_child[1];
	report_fd_ = to_parent[0];
}

IdleAttacker::~IdleAttacker()
{
	leave();
}

static bool read_within(int fd, void *buf, size_t len, int seconds)
{
	pollfd p{fd, POLLIN, 0};
	if (poll(&p, 1, seconds * 1000) != 1)
		return false;
	return read(fd, buf, len) == ssize_t(len);
}

bool IdleAttacker::start(int seconds)
{
	char go = 'G', reply = 0;
	return pid_ > 0 && write(command_fd_, &go, 1) == 1 &&
	       read_within(report_fd_, &reply, 1, seconds) && reply == 'C';
}

int IdleAttacker::closed_by_server()
{
	char query = 'Q';
	int closed = -1;
	if (pid_ <= 0 || write(command_fd_, &query, 1) != 1 ||
	    !read_within(report_fd_, &closed, sizeof(closed), 10))
		return -1;
	return closed;
}

void IdleAttacker::leave()
{
	if (pid_ <= 0)
		return;
	char bye = 'L';
	if (write(command_fd_, &bye, 1) != 1)
		kill(pid_, SIGKILL);
	int status;
	waitpid(pid_, &status, 0);
	close(command_fd_);
	close(report_fd_);
	pid_ = -1;
}

} // namespace adversarial
