#include "src/tostr_writer.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ofi::tostr {

void TextSink::append(const char *fmt, ...)
{
	size_t used = strnlen(buf_, len_);
	// Room for this piece including its terminator; one byte at the end stays unused.
	if (used + 1 >= len_)
		return;
	size_t room = len_ - 1 - used;

	va_list args;
	va_start(args, fmt);
	vsnprintf(buf_ + used, room, fmt, args);
	va_end(args);
}

void TextSink::append_address(const char *fmt, ...)
{
	size_t used = strnlen(buf_, len_);
	if (used >= len_)
		return;

	va_list args;
	va_start(args, fmt);
	vsnprintf(buf_ + used, len_ - used, fmt, args);
	va_end(args);
	buf_[len_ - 1] = '\0';
}

void TextSink::drop_trailing_separator()
{
	size_t used = strnlen(buf_, len_);
	if (used >= 2 && buf_[used - 2] == ',' && buf_[used - 1] == ' ')
		buf_[used - 2] = '\0';
}

} // namespace ofi::tostr
