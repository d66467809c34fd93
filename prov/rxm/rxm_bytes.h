// Little-endian field access for wire and CM-data encoding. The wire format is defined byte by
// byte (not by a C struct) so that padding, alignment and host byte order never leak onto it.
#ifndef OFI_PROV_RXM_BYTES_H
#define OFI_PROV_RXM_BYTES_H

#include <cstddef>
#include <cstdint>

namespace rxm {

inline void put_u8(uint8_t *p, uint8_t v) { p[0] = v; }

inline void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = static_cast<uint8_t>(v);
	p[1] = static_cast<uint8_t>(v >> 8);
}

inline void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = static_cast<uint8_t>(v >> (8 * i));
}

inline void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = static_cast<uint8_t>(v >> (8 * i));
}

inline uint8_t get_u8(const uint8_t *p) { return p[0]; }

inline uint16_t get_u16(const uint8_t *p)
{
	return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

inline uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

inline uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

} // namespace rxm

#endif
