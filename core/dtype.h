// Element types of topotrain tensors and the host-side conversions between fp32 and the
// low-precision formats. Conversions are __host__ __device__-ready plain functions so the CPU can
// emulate bf16/fp16/fp8 numerics exactly (round to nearest even) where no GPU runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cmath>
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
// bias, saturating to the largest finite value `max_finite`, or overflowing to inf when has_inf.
float round_to_format(float x, int exp_bits, int man_bits, float max_finite, bool has_inf);

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

// ---- OCP fp8: E4M3 (bias 7, max 448, no inf, NaN 0x7f) and E5M2 (bias 15, max 57344, inf, NaN) ----
// Encoding rounds to nearest even and saturates: finite values beyond the format's range and ±inf
// become ±max (cuDNN/cuBLAS "satfinite", as training recipes cast), NaN stays NaN. Written on the
// bits, __host__ __device__: the CPU emulation and the CUDA kernels produce the same codes.
enum class Fp8Format { kE4M3, kE5M2 };
constexpr float kFp8E4M3Max = 448.0f;
constexpr float kFp8E5M2Max = 57344.0f;
TT_HOST_DEVICE inline float fp8_max(Fp8Format f) { return f == Fp8Format::kE4M3 ? kFp8E4M3Max : kFp8E5M2Max; }

TT_HOST_DEVICE inline uint8_t f32_to_fp8(float x, Fp8Format f) {
  const int man = f == Fp8Format::kE4M3 ? 3 : 2;
  const int bias = f == Fp8Format::kE4M3 ? 7 : 15;
  const uint32_t max_code = f == Fp8Format::kE4M3 ? 0x7eu : 0x7bu;
  const uint32_t u = f32_bits(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint8_t(sign | 0x7fu);     // NaN
  if (a == 0x7f800000u) return uint8_t(sign | max_code);  // inf saturates
  uint32_t code;
  if (a >= uint32_t(128 - bias) << 23) {  // at least the smallest normal, 2^(1 - bias)
    const int drop = 23 - man;            // round the fp32 mantissa to `man` bits, nearest even
    const uint32_t rounded = (a + ((1u << (drop - 1)) - 1u) + ((a >> drop) & 1u)) >> drop;
    code = rounded - (uint32_t(127 - bias) << man);  // rebias; a carry moves into the exponent
    if (code > max_code) code = max_code;
  } else {  // subnormal: a multiple of 2^(1 - bias - man); exact scaling by a power of two
    const float quantum_inv = f32_from_bits(uint32_t(127 + bias - 1 + man) << 23);
    code = uint32_t(rintf(f32_from_bits(a) * quantum_inv));  // 0 .. 2^man (2^man: the smallest normal)
  }
  return uint8_t(sign | code);
}

TT_HOST_DEVICE inline float fp8_to_f32(uint8_t c, Fp8Format f) {
  const int man = f == Fp8Format::kE4M3 ? 3 : 2;
  const int bias = f == Fp8Format::kE4M3 ? 7 : 15;
  const uint32_t sign = uint32_t(c & 0x80u) << 24;
  const uint32_t field = (c & 0x7fu) >> man, mant = c & ((1u << man) - 1u);
  if (f == Fp8Format::kE4M3 && (c & 0x7fu) == 0x7fu) return f32_from_bits(0x7fc00000u);
  if (f == Fp8Format::kE5M2 && field == 31u) return f32_from_bits(sign | (mant ? 0x7fc00000u : 0x7f800000u));
  if (field == 0) {  // subnormal: mant × 2^(1 - bias - man)
    const float quantum = f32_from_bits(uint32_t(127 + 1 - bias - man) << 23);
    return f32_from_bits(sign | f32_bits(float(mant) * quantum));
  }
  return f32_from_bits(sign | ((field - uint32_t(bias) + 127u) << 23) | (mant << (23 - man)));
}

inline uint8_t f32_to_fp8_e4m3(float f) { return f32_to_fp8(f, Fp8Format::kE4M3); }
inline float fp8_e4m3_to_f32(uint8_t v) { return fp8_to_f32(v, Fp8Format::kE4M3); }
inline uint8_t f32_to_fp8_e5m2(float f) { return f32_to_fp8(f, Fp8Format::kE5M2); }
inline float fp8_e5m2_to_f32(uint8_t v) { return fp8_to_f32(v, Fp8Format::kE5M2); }

}  // namespace tt
