// bf16 / block-scaled int8 and fp8 gradient compression and error feedback (see compression.h).
#include "parallel/ddp/compression.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"

namespace tt::parallel {

GradCompression parse_grad_compression(const std::string& name) {
  if (name.empty() || name == "none") return GradCompression::kNone;
  if (name == "bf16") return GradCompression::kBf16;
  if (name == "int8") return GradCompression::kInt8;
  if (name == "fp8") return GradCompression::kFp8;
  throw Error(ErrorKind::kConfig, "unknown gradient compression '" + name + "'", "parallel.grad_compression",
              "use none, bf16, int8 or fp8");
}

const char* grad_compression_name(GradCompression c) {
  switch (c) {
    case GradCompression::kNone:
      return "none";
    case GradCompression::kBf16:
      return "bf16";
    case GradCompression::kInt8:
      return "int8";
    case GradCompression::kFp8:
      return "fp8";
  }
  return "?";
}

size_t compressed_bytes(int64_t n, GradCompression c) {
  switch (c) {
    case GradCompression::kNone:
      return size_t(n) * 4;
    case GradCompression::kBf16:
      return size_t(n) * 2;
    case GradCompression::kInt8:
    case GradCompression::kFp8:
      return size_t(n) + size_t((n + kInt8Block - 1) / kInt8Block) * 4;
  }
  return 0;
}

double payload_bytes_per_element(GradCompression c) {
  return block_scaled(c) ? 1.0 + 4.0 / kInt8Block : c == GradCompression::kBf16 ? 2.0 : 4.0;
}

std::vector<int64_t> chunk_bounds(int64_t n, int parts) {
  TT_ASSERT(parts >= 1 && n >= 0, "chunk_bounds(", n, ", ", parts, ")");
  const int64_t blocks = (n + kInt8Block - 1) / kInt8Block;
  const int64_t base = blocks / parts, extra = blocks % parts;
  std::vector<int64_t> b(size_t(parts) + 1, 0);
  int64_t blocks_before = 0;
  for (int r = 0; r < parts; ++r) {
    blocks_before += base + (r < extra ? 1 : 0);
    b[size_t(r) + 1] = std::min(n, blocks_before * kInt8Block);
  }
  return b;
}

// Block-scaled layout (int8, fp8): all scales first (fp32, one per block), then the 1-byte codes.
// Scales are read and written with memcpy: payload slots need not be 4-byte aligned.
namespace {

// 1 / scale, or 0 for a zero block or a scale so small (subnormal) that its inverse overflows.
inline float inverse_scale(float scale) {
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  return std::isfinite(inv) ? inv : 0.0f;
}

// Block [lo, hi) of g: absmax -> scale (absmax maps to the code's max); q <- codes; returns the scale.
// NaN elements do not raise the absmax (std::max keeps the first argument), as fmaxf on the GPU.
inline float quantise_block(const float* g, int64_t lo, int64_t hi, GradCompression c, uint8_t* q) {
  float absmax = 0.0f;
  for (int64_t i = lo; i < hi; ++i) absmax = std::max(absmax, std::fabs(g[i]));
  const float scale = absmax / block_code_max(c);
  const float inv = inverse_scale(scale);
  for (int64_t i = lo; i < hi; ++i) q[i] = encode_block_code(g[i] * inv, c);
  return scale;
}

}  // namespace

void compress(const float* in, int64_t n, GradCompression c, uint8_t* out) {
  if (c == GradCompression::kNone) {
    std::memcpy(out, in, size_t(n) * 4);
  } else if (c == GradCompression::kBf16) {
    uint16_t* o = reinterpret_cast<uint16_t*>(out);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) o[i] = f32_to_bf16(in[i]);
  } else {
    const int64_t blocks = (n + kInt8Block - 1) / kInt8Block;
    uint8_t* q = out + blocks * 4;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      const float scale = quantise_block(in, lo, hi, c, q);
      std::memcpy(out + b * 4, &scale, 4);
    }
  }
}

void decompress_add(const uint8_t* in, int64_t n, GradCompression c, float scale, float* acc) {
  if (c == GradCompression::kNone) {
    const float* v = reinterpret_cast<const float*>(in);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) acc[i] += scale * v[i];
  } else if (c == GradCompression::kBf16) {
    const uint16_t* v = reinterpret_cast<const uint16_t*>(in);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) acc[i] += scale * bf16_to_f32(v[i]);
  } else {
    const int64_t blocks = (n + kInt8Block - 1) / kInt8Block;
    const uint8_t* q = in + blocks * 4;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      float block_scale;
      std::memcpy(&block_scale, in + b * 4, 4);
      const float s = scale * block_scale;  // (scale * block scale) * value, as element-wise
      const int64_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      for (int64_t i = lo; i < hi; ++i) acc[i] += s * decode_block_code(q[i], c);
    }
  }
}

// One pass per block (or element): g += residual; out <- Q(g); residual <- g - deQ(out).
void compress_with_feedback(float* g, float* residual, int64_t n, GradCompression c, uint8_t* out) {
  if (!residual) {
    compress(g, n, c, out);
    return;
  }
  if (c == GradCompression::kNone) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      g[i] += residual[i];
      residual[i] = 0.0f;
    }
    std::memcpy(out, g, size_t(n) * 4);
  } else if (c == GradCompression::kBf16) {
    uint16_t* o = reinterpret_cast<uint16_t*>(out);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      g[i] += residual[i];
      o[i] = f32_to_bf16(g[i]);
      residual[i] = g[i] - bf16_to_f32(o[i]);
    }
  } else {
    const int64_t blocks = (n + kInt8Block - 1) / kInt8Block;
    uint8_t* q = out + blocks * 4;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      for (int64_t i = lo; i < hi; ++i) g[i] += residual[i];
      const float scale = quantise_block(g, lo, hi, c, q);
      std::memcpy(out + b * 4, &scale, 4);
      for (int64_t i = lo; i < hi; ++i) residual[i] = g[i] - scale * decode_block_code(q[i], c);
    }
  }
}

}  // namespace tt::parallel
