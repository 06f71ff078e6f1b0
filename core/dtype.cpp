// DType table and the fp16 conversion, written as a generic "round to a small IEEE-like format"
// (the fp8 conversions are bit-level and __host__ __device__, in the header).
#include "core/dtype.h"

#include <cmath>

#include "core/error.h"

namespace tt {

namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "f32", 4},         {DType::kBF16, "bf16", 2},       {DType::kF16, "f16", 2},
    {DType::kFP8E4M3, "fp8e4m3", 1}, {DType::kFP8E5M2, "fp8e5m2", 1}, {DType::kI8, "i8", 1},
    {DType::kI32, "i32", 4},         {DType::kU16, "u16", 2},         {DType::kU32, "u32", 4},
};

// Encodes an already-rounded value r (|r| representable) into sign/exponent/mantissa bits.
uint32_t encode_rounded(float r, int exp_bits, int man_bits) {
  uint32_t sign = std::signbit(r) ? 1u : 0u;
  float a = std::fabs(r);
  int bias = (1 << (exp_bits - 1)) - 1;
  int emin = 1 - bias;
  uint32_t field = 0, mant = 0;
  if (std::isinf(a)) {
    field = (1u << exp_bits) - 1;
  } else if (a >= std::ldexp(1.0f, emin)) {
    int ex;
    std::frexp(a, &ex);
    ex -= 1;
    field = uint32_t(ex + bias);
    mant = uint32_t(std::ldexp(a, man_bits - ex)) - (1u << man_bits);
  } else {
    mant = uint32_t(std::ldexp(a, man_bits - emin));
  }
  return (sign << (exp_bits + man_bits)) | (field << man_bits) | mant;
}

float decode_bits(uint32_t bits, int exp_bits, int man_bits) {
  uint32_t sign = (bits >> (exp_bits + man_bits)) & 1u;
  uint32_t field = (bits >> man_bits) & ((1u << exp_bits) - 1);
  uint32_t mant = bits & ((1u << man_bits) - 1);
  int bias = (1 << (exp_bits - 1)) - 1;
  float v = field == 0 ? std::ldexp(float(mant), 1 - bias - man_bits)
                       : std::ldexp(1.0f + std::ldexp(float(mant), -man_bits), int(field) - bias);
  return sign ? -v : v;
}
}  // namespace

size_t dtype_size(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.size;
  TT_ASSERT(false, "unknown dtype");
  return 0;
}

const char* dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.name;
  return "?";
}

DType dtype_from_name(const std::string& name) {
  std::string all;
  for (const auto& d : kDTypes) {
    if (name == d.name) return d.type;
    all += std::string(all.empty() ? "" : ", ") + d.name;
  }
  throw Error(ErrorKind::kConfig, "unknown dtype '" + name + "'", "", "use one of: " + all);
}

float round_to_format(float x, int exp_bits, int man_bits, float max_finite, bool has_inf) {
  if (std::isnan(x)) return x;
  float a = std::fabs(x);
  if (std::isinf(a)) return has_inf ? x : std::copysign(max_finite, x);
  int bias = (1 << (exp_bits - 1)) - 1;
  int emin = 1 - bias;
  int ex = emin;
  if (a >= std::ldexp(1.0f, emin)) {
    std::frexp(a, &ex);
    ex -= 1;
  }
  float quantum = std::ldexp(1.0f, ex - man_bits);
  float r = std::nearbyint(a / quantum) * quantum;
  if (r > max_finite) r = has_inf ? INFINITY : max_finite;
  return std::copysign(r, x);
}

uint16_t f32_to_f16(float f) {
  if (std::isnan(f)) return 0x7e00;
  return uint16_t(encode_rounded(round_to_format(f, 5, 10, 65504.0f, true), 5, 10));
}
float f16_to_f32(uint16_t h) {
  if ((h & 0x7c00) == 0x7c00) return (h & 0x3ff) ? NAN : ((h & 0x8000) ? -INFINITY : INFINITY);
  return decode_bits(h, 5, 10);
}

}  // namespace tt
