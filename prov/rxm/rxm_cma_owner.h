// Same-host rendezvous, part two of the proof (part one is the token, rxm_cma.h): the pid a
// peer names must own the very socket at the other end of our connection. The token alone
// proves only that *some* process with those bytes exists; a peer could name a bystander whose
// bytes it knows (a forked child, the ELF header of a non-PIE binary) and have a privileged
// receiver copy the bystander's memory out for it.
//
// Kernel facts only, nothing the peer's bytes say: our connection's two socket addresses ->
// NETLINK_SOCK_DIAG finds the socket whose local address is the peer's and whose remote
// address is ours (the far end, on this host and in this network namespace) -> its inode must
// be one of the named process's open files (/proc/PID/fd/N -> "socket:[INODE]"). The process
// must also not be more privileged than the socket's creator (all its uids equal the socket's
// uid, all its gids equal, no capabilities unless that uid is 0), so a peer cannot hand its
// socket to a set-uid program it started and have that program's memory read.
#ifndef OFI_PROV_RXM_CMA_OWNER_H
#define OFI_PROV_RXM_CMA_OWNER_H

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>

namespace rxm {

struct SocketFacts {
	uint64_t inode = 0;
	uint32_t uid = 0; // of the process that created the socket
};

// Looks up the TCP socket bound to `local` and connected to `remote` (both sockaddr_in or
// sockaddr_in6; IPv4-mapped IPv6 addresses match IPv4 sockets). 0 and the facts when exactly
// that socket exists and is established; -FI_ENOENT when it does not (another host, another
// netns, a listener only); another negative errno when the kernel cannot be asked.
// No allocation; the netlink socket waits at most one second.
int cma_find_tcp_socket(const sockaddr *local, const sockaddr *remote, SocketFacts *facts);

// 0 when process pid has socket `inode` among its open files; -FI_ENOENT when it has not;
// -EACCES/-ESRCH etc. when its fd table cannot be read. No allocation.
int cma_process_holds_socket(pid_t pid, uint64_t inode);

// 0 when process pid runs with exactly uid (real, effective, saved, fs), one gid throughout,
// and (uid != 0) no permitted capabilities; -FI_EPERM otherwise, -errno when unreadable.
int cma_process_not_elevated(pid_t pid, uint32_t uid);

// All of the above for the peer of a connection whose local and peer socket addresses are
// given (ours as fi_getname, theirs as fi_getpeer report them on the core endpoint).
int cma_check_socket_owner(pid_t pid, const sockaddr *local, const sockaddr *peer);

} // namespace rxm

#endif
