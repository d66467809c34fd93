// Little-endian field access for wire and CM-data encoding. The wire format is defined byte by
// byte (not by a C struct) so that padding, alignment and host byte order never leak onto it.
#ifndef OFI_PROV_RXM_BYTES_H
#define OFI_PROV_RXM_BYTES_H

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rxm {

inline void put_u8(uint8_t *p, uint8_t v) { p[0] = v; }

// The fields are little-endian on the wire. On a little-endian host each access is one
// unaligned load or store: the byte loops this replaces cost ~300 instructions per rxm
// header encode and ~400 per decode (callgrind, fabtests/bench/PROFILE-wire.md), on every
// message of both sides.
template <class T>
inline T swap_bytes(T v)
{
	if constexpr (sizeof(T) == 2)
		return static_cast<T>(__builtin_bswap16(v));
	else if constexpr (sizeof(T) == 4)
		return static_cast<T>(__builtin_bswap32(v));
	else
		return static_cast<T>(__builtin_bswap64(v));
}

template <class T>
inline void put_le(uint8_t *p, T v)
{
	if constexpr (std::endian::native == std::endian::big)
		v = swap_bytes(v);
	std::memcpy(p, &v, sizeof(v));
}

template <class T>
inline T get_le(const uint8_t *p)
{
	T v;
	std::memcpy(&v, p, sizeof(v));
	if constexpr (std::endian::native == std::endian::big)
		v = swap_bytes(v);
	return v;
}

inline void put_u16(uint8_t *p, uint16_t v) { put_le(p, v); }
inline void put_u32(uint8_t *p, uint32_t v) { put_le(p, v); }
inline void put_u64(uint8_t *p, uint64_t v) { put_le(p, v); }

inline uint8_t get_u8(const uint8_t *p) { return p[0]; }
inline uint16_t get_u16(const uint8_t *p) { return get_le<uint16_t>(p); }
inline uint32_t get_u32(const uint8_t *p) { return get_le<uint32_t>(p); }
inline uint64_t get_u64(const uint8_t *p) { return get_le<uint64_t>(p); }

} // namespace rxm

#endif
