// Test helper: how many epoll sets of its own (each holding the one before) an application
// can stack over fd, up to 5 (Linux's limit): what a wait fd leaves to the application.
#ifndef OFI_PROV_UTIL_TEST_EPOLL_LEVELS_H
#define OFI_PROV_UTIL_TEST_EPOLL_LEVELS_H

#include <sys/epoll.h>
#include <unistd.h>

inline int levels_accepted(int fd)
{
	int sets[5] = {-1, -1, -1, -1, -1};
	int inner = fd, n = 0;
	for (int &set : sets) {
		set = epoll_create1(EPOLL_CLOEXEC);
		epoll_event ev{};
		ev.events = EPOLLIN;
		if (set < 0 || epoll_ctl(set, EPOLL_CTL_ADD, inner, &ev))
			break;
		inner = set;
		++n;
	}
	for (int set : sets)
		if (set >= 0)
			::close(set);
	return n;
}

#endif
