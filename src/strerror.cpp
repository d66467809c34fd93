// fi_strerror: text for FI_E* codes. Codes below FI_ERRNO_OFFSET are the host's errno values
// and get the C library's text; the fabric-specific codes have their own.
#include <rdma/fi_errno.h>

#include <climits>
#include <cstring>

namespace {

// Indexed by code - FI_ERRNO_OFFSET.
constexpr const char *fabric_error_texts[] = {
	"Unspecified error",				   // FI_EOTHER
	"Provided buffer is too small",			   // FI_ETOOSMALL
	"Operation not permitted in current state",	   // FI_EOPBADSTATE
	"Error available",				   // FI_EAVAIL
	"Flags not supported",				   // FI_EBADFLAGS
	"Missing or unavailable event queue",		   // FI_ENOEQ
	"Invalid resource domain",			   // FI_EDOMAIN
	"Missing or unavailable completion queue",	   // FI_ENOCQ
	"CRC error",					   // FI_ECRC
	"Truncation error",				   // FI_ETRUNC
	"Required key not available",			   // FI_ENOKEY
	"Missing or unavailable address vector",	   // FI_ENOAV
	"Queue has been overrun",			   // FI_EOVERRUN
	"Receiver not ready, no receive buffers available", // FI_ENORX
};

static_assert(sizeof fabric_error_texts / sizeof fabric_error_texts[0] ==
	      FI_ERRNO_MAX - FI_ERRNO_OFFSET);

} // namespace

extern "C" const char *fi_strerror(int errnum)
{
	// Either sign is accepted. INT_MIN has no positive counterpart and is passed on as is,
	// so the C library reports it as an unknown error.
	int code = errnum == INT_MIN ? errnum : (errnum < 0 ? -errnum : errnum);
	if (code < FI_ERRNO_OFFSET)
		return strerror(code);
	if (code < FI_ERRNO_MAX)
		return fabric_error_texts[code - FI_ERRNO_OFFSET];
	// Codes beyond the known range are still fabric errors, just unnamed ones.
	return fabric_error_texts[FI_EOTHER - FI_ERRNO_OFFSET];
}
