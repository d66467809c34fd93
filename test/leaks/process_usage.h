// What a process holds, for leak tests that compare before and after many life cycles:
// open file descriptors and resident memory, read from /proc/self.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdio>

namespace process_usage {

// Entries of /proc/self/fd (includes ".", ".." and the directory's own fd: a constant).
inline int open_fd_count()
{
	int count = 0;
	DIR *dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while (readdir(dir))
		count++;
	closedir(dir);
	return count;
}

inline long resident_kib()
{
	long pages_total = 0, pages_resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2)
		pages_resident = -1;
	fclose(f);
	return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

} // namespace process_usage
