// What crossed this process's TCP sockets, from the kernel's own counters (TCP_INFO): tests
// that must show traffic left tcp (rxm's same-host peers moving to shm) read it before and
// after an exchange (prov/rxm/test/rxm_shm_switch*, test/faults/peer_failure_test).
#pragma once

#include <dirent.h>
#include <linux/tcp.h> // tcp_info with the byte counters (glibc's lacks them)
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <map>

namespace test_tcp {

// Bytes sent (acked) plus received over every TCP socket this process holds, per socket
// (inode), so a check can tell traffic on a connection from one opened or closed meanwhile.
struct TcpSnapshot {
	std::map<ino_t, uint64_t> bytes;
	uint64_t total() const
	{
		uint64_t sum = 0;
		for (auto &[ino, n] : bytes)
			sum += n;
		return sum;
	}
};

inline TcpSnapshot tcp_snapshot()
{
	TcpSnapshot snap;
	DIR *dir = opendir("/proc/self/fd");
	if (!dir)
		return snap;
	while (dirent *e = readdir(dir)) {
		int fd = atoi(e->d_name);
		if (fd <= 2 || fd == dirfd(dir))
			continue;
		tcp_info info{};
		socklen_t len = sizeof(info);
		struct stat st{};
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && fstat(fd, &st) == 0)
			snap.bytes[st.st_ino] = info.tcpi_bytes_acked + info.tcpi_bytes_received;
	}
	closedir(dir);
	return snap;
}

// The sum over all of them.
inline uint64_t tcp_bytes() { return tcp_snapshot().total(); }

} // namespace test_tcp
