// Element types of topotrain tensors and the host-side conversions between fp32 and the
// low-precision formats. Conversions are __host__ __device__-ready plain functions so the CPU can
// emulate bf16/fp16/fp8 numerics exactly (round to nearest even) where no GPU runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/host_device.h"

namespace tt {

enum class DType { kF32, kBF16, kF16, kFP8E4M3, kFP8E5M2, kI8, kI32, kU16, kU32 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);
DType dtype_from_name(const std::string& name);  // throws kConfig naming the bad name

TT_HOST_DEVICE inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
TT_HOST_DEVICE inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16: top 16 bits of fp32, round to nearest even; NaN stays NaN.
TT_HOST_DEVICE inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
TT_HOST_DEVICE inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

// Generic round-to-nearest-even into a small float format with `exp_bits`/`man_bits`, IEEE-like
// bias, saturating to the largest finite value `max_finite` (fp8 formats saturate in training use).
float round_to_format(float x, int exp_bits, int man_bits, float max_finite, bool has_inf);

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint8_t f32_to_fp8_e4m3(float f);  // OCP E4M3: max 448, no inf, saturating
float fp8_e4m3_to_f32(uint8_t v);
uint8_t f32_to_fp8_e5m2(float f);  // OCP E5M2: max 57344, saturating
float fp8_e5m2_to_f32(uint8_t v);

}  // namespace tt
