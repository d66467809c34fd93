#include "prov/util/fid_object.h"

namespace util {

FidObject::~FidObject()
{
	// Poison the header so a dangling fid used after fi_close is refused.
	retire_fid();
}

void FidObject::retire_fid() noexcept
{
	auto *header = reinterpret_cast<FidHeader *>(
		reinterpret_cast<uintptr_t>(fid_) - kFidHeaderDistance);
	header->magic = 0;
	header->owner = nullptr;
}

int FidObject::close()
{
	if (busy())
		return -FI_EBUSY;
	delete this;
	return 0;
}

} // namespace util
