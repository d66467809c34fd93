// Appends formatted text to a caller's fixed-size buffer, the way fi_tostr_r fills it.
//
// The observable behaviour on a too-small buffer is part of the API contract applications
// see (they get the same truncated text from every libfabric), so the rule is kept exactly:
// each append may use the space up to, but not including, the last byte of the buffer, and
// whatever does not fit is dropped while later appends still try their luck.
#ifndef OFI_SRC_TOSTR_WRITER_H
#define OFI_SRC_TOSTR_WRITER_H

#include <rdma/fabric.h>

#include <cstddef>

namespace ofi::tostr {

class TextSink {
public:
	// buf must hold a NUL-terminated string (possibly empty) within its first len bytes.
	TextSink(char *buf, size_t len) : buf_(buf), len_(len) {}

	void append(const char *fmt, ...) FI_FORMAT_PRINTF(2, 3);

	// Addresses are the one exception to the rule above: their text may also use the
	// byte before the last, and the buffer's last byte is then set to NUL whether or
	// not the text reached it.
	void append_address(const char *fmt, ...) FI_FORMAT_PRINTF(2, 3);

	// Flag lists are written as "A, B, C, "; this drops the separator after the last one.
	void drop_trailing_separator();

	char *data() const { return buf_; }
	size_t capacity() const { return len_; }

private:
	char *buf_;
	size_t len_;
};

} // namespace ofi::tostr

#endif
