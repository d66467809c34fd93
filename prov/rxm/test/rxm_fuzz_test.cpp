// Random and mutated bytes fed to every decoder: a peer's bytes are untrusted, so decoding
// must never read out of bounds, and whatever it accepts must be self-consistent.
#include "prov/rxm/rxm_cm_data.h"
#include "prov/rxm/rxm_wire.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace rxm;

TEST(RxmFuzz, DecodersSurviveRandomAndMutatedInput)
{
	std::mt19937_64 rng(12345);
	// Valid seeds, mutated byte by byte, plus pure noise of random lengths.
	std::vector<std::vector<uint8_t>> seeds;
	{
		WireHeader h;
		h.op = WireOp::sar_segment;
		h.total_len = 100;
		h.offset = 50;
		h.payload_len = 50;
		h.flags = wire_flag::last_segment;
		std::vector<uint8_t> m(kWireHeaderSize + 50);
		encode_header(h, m.data());
		seeds.push_back(m);
		RndvSegment segs[2] = {{1, 60, 2}, {3, 40, 4}};
		WireHeader r;
		r.op = WireOp::rndv_request;
		r.total_len = 100;
		r.payload_len = static_cast<uint32_t>(rndv_payload_size(2));
		std::vector<uint8_t> rm(kWireHeaderSize + r.payload_len);
		encode_header(r, rm.data());
		encode_rndv(segs, rm.data() + kWireHeaderSize);
		seeds.push_back(rm);
	}
	int accepted = 0;
	for (int iter = 0; iter < 200000; iter++) {
		std::vector<uint8_t> m;
		if (iter % 2) {
			m = seeds[iter % seeds.size()];
			for (int k = 0; k < 3; k++)
				m[rng() % m.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
		} else {
			m.resize(rng() % 200);
			for (auto &b : m)
				b = static_cast<uint8_t>(rng());
		}
		WireHeader h;
		if (decode_message(m, &h) == 0) {
			accepted++;
			ASSERT_EQ(m.size() - kWireHeaderSize, h.payload_len);
			std::span<const uint8_t> payload(m.data() + kWireHeaderSize, h.payload_len);
			if (h.op == WireOp::sar_segment) {
				ASSERT_LE(h.offset + h.payload_len, h.total_len);
			}
			if (h.op == WireOp::rndv_request) {
				RndvSegment segs[kRndvMaxSegments];
				size_t n = 0;
				if (decode_rndv(payload, h.total_len, segs, &n) == 0) {
					uint64_t sum = 0;
					for (size_t i = 0; i < n; i++)
						sum += segs[i].len;
					ASSERT_EQ(h.total_len, sum);
				}
			}
			AtomicRequest req;
			std::span<const uint8_t> operand, compare;
			if (decode_atomic_request(payload, h.flags, &req, &operand, &compare) == 0) {
				ASSERT_LE(operand.size() + compare.size() + kAtomicRequestFixedSize,
					  payload.size());
			}
			int32_t status;
			std::span<const uint8_t> fetched;
			(void)decode_atomic_response(payload, &status, &fetched);
		}
		CmData cm;
		if (decode_cm_data(m, &cm) == 0) {
			ASSERT_LE(cm.identity.name_len, kCmMaxNameLen);
		}
	}
	EXPECT_GT(accepted, 0); // the mutations keep some messages valid
}
