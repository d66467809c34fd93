// Helpers shared by the fi_tostr unit tests.
#ifndef OFI_SRC_TEST_TOSTR_TEST_UTIL_H
#define OFI_SRC_TEST_TOSTR_TEST_UTIL_H

#include <rdma/fabric.h>

#include <string>
#include <vector>

// fi_tostr_r into a buffer of 'len' bytes; "<NULL>" when it returns NULL.
inline std::string tostr(const void *data, enum fi_type type, size_t len = 16384)
{
	std::vector<char> buf(len ? len : 1, 'Z');
	char *text = fi_tostr_r(buf.data(), len, data, type);
	return text ? std::string(text) : std::string("<NULL>");
}

template <typename T>
std::string tostr_value(T value, enum fi_type type, size_t len = 16384)
{
	return tostr(&value, type, len);
}

#endif
