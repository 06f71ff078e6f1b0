// bf16 / block-wise int8 gradient compression and error feedback (see compression.h).
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
  throw Error(ErrorKind::kConfig, "unknown gradient compression '" + name + "'", "parallel.grad_compression",
              "use none, bf16 or int8");
}

const char* grad_compression_name(GradCompression c) {
  switch (c) {
    case GradCompression::kNone:
      return "none";
    case GradCompression::kBf16:
      return "bf16";
    case GradCompression::kInt8:
      return "int8";
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
      return size_t(n) + size_t((n + kInt8Block - 1) / kInt8Block) * 4;
  }
  return 0;
}

double payload_bytes_per_element(GradCompression c) {
  return c == GradCompression::kInt8 ? 1.0 + 4.0 / kInt8Block : c == GradCompression::kBf16 ? 2.0 : 4.0;
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

// int8 layout: all scales first (fp32, one per block), then the int8 values. Scales are read and
// written with memcpy: payload slots need not be 4-byte aligned.
namespace {

// NaN (a NaN or infinite gradient) quantises to 0, as on the GPU (grad_codec_cuda.cu).
inline int8_t quantise(float x, float inv) {
  const float q = std::nearbyint(x * inv);
  return q == q ? int8_t(std::clamp(q, -127.0f, 127.0f)) : int8_t(0);
}

// 1 / scale, or 0 for a zero block or a scale so small (subnormal) that its inverse overflows.
inline float inverse_scale(float scale) {
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  return std::isfinite(inv) ? inv : 0.0f;
}

// Block b of an int8 payload: absmax over g[lo, hi) -> scale; q <- Q(g); returns the scale.
inline float quantise_block(const float* g, int64_t lo, int64_t hi, int8_t* q) {
  float absmax = 0.0f;
  for (int64_t i = lo; i < hi; ++i) absmax = std::max(absmax, std::fabs(g[i]));
  const float scale = absmax / 127.0f;
  const float inv = inverse_scale(scale);
  for (int64_t i = lo; i < hi; ++i) q[i] = quantise(g[i], inv);
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
    int8_t* q = reinterpret_cast<int8_t*>(out + blocks * 4);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      const float scale = quantise_block(in, lo, hi, q);
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
    const int8_t* q = reinterpret_cast<const int8_t*>(in + blocks * 4);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      float block_scale;
      std::memcpy(&block_scale, in + b * 4, 4);
      const float s = scale * block_scale;  // (scale * block scale) * q, as element-wise
      const int64_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      for (int64_t i = lo; i < hi; ++i) acc[i] += s * float(q[i]);
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
    int8_t* q = reinterpret_cast<int8_t*>(out + blocks * 4);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      for (int64_t i = lo; i < hi; ++i) g[i] += residual[i];
      const float scale = quantise_block(g, lo, hi, q);
      std::memcpy(out + b * 4, &scale, 4);
      for (int64_t i = lo; i < hi; ++i) residual[i] = g[i] - scale * float(q[i]);
    }
  }
}

}  // namespace tt::parallel
