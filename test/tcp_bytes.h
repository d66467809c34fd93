// What crossed this process's TCP sockets, from the kernel's own counters (TCP_INFO): tests
// that must show traffic left tcp (rxm's same-host peers moving to shm) read it before and
// after an exchange (prov/rxm/test/rxm_shm_switch*, test/faults/peer_failure_test).
#pragma once

#include <dirent.h>
#include <linux/tcp.h> // tcp_info with the byte counters (glibc's lacks them)
#include <linux/sockios.h> // SIOCOUTQ
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <map>

namespace test_tcp {

// Bytes written plus received over every TCP socket this process holds, per socket (inode),
// so a check can tell traffic on a connection from one opened or closed meanwhile.
//
// Written, not acked: the kernel's tcpi_bytes_acked grows when the peer's kernel acknowledges,
// and a receiver that sends nothing back (a connection that just moved to shm) acknowledges
// by a delayed ACK, up to tens of milliseconds later. The last message of a direction on tcp
// (rxm's shm_moved marker, 104 bytes; a tcp-level ack, 48) was then counted in the window
// measured after the move, about one run in six, though no data segment left the socket
// (tcpi_data_segs_out and tcpi_bytes_sent flat, SIOCOUTQ going from 104 to 0). Bytes acked
// plus what waits in the send queue (SIOCOUTQ: not yet acked) is what the process wrote.
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

// False for a socket that is not TCP. An ACK between the two calls would count its bytes
// twice or not at all: read until the acked count holds still around the queue's.
inline bool tcp_written_and_received(int fd, uint64_t *written, uint64_t *received)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		tcp_info before{}, after{};
		socklen_t len = sizeof(before);
		int queued = 0;
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &before, &len) != 0 ||
		    ioctl(fd, SIOCOUTQ, &queued) != 0)
			return false;
		len = sizeof(after);
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &after, &len) != 0)
			return false;
		if (before.tcpi_bytes_acked == after.tcpi_bytes_acked) {
			*written = after.tcpi_bytes_acked + static_cast<uint64_t>(queued);
			*received = after.tcpi_bytes_received;
			return true;
		}
	}
	return false;
}

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
		struct stat st{};
		uint64_t written = 0, received = 0;
		if (tcp_written_and_received(fd, &written, &received) && fstat(fd, &st) == 0)
			snap.bytes[st.st_ino] = written + received;
	}
	closedir(dir);
	return snap;
}

// The sum over all of them.
inline uint64_t tcp_bytes() { return tcp_snapshot().total(); }

} // namespace test_tcp
