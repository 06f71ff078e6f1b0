// Gradient payload compression for the all-reduce: bf16 (round to nearest even), and two 1-byte
// codes with one fp32 absmax scale shared by each block of kInt8Block elements: int8 (absmax maps
// to 127, uniform steps) and fp8 E5M2 (absmax maps to 57344; 2 mantissa bits, so a relative error
// of at most 2^-3 over a wide range instead of int8's absolute absmax/254). Plus the error-feedback
// residual that carries what quantisation dropped into the next step (without it, gradients
// smaller than half a quantisation step are lost forever).
//
// Design: GradReducer's compressed all-reduce is a compressed reduce-scatter + all-gather. Each
// bucket is split into one chunk per rank (chunk_bounds); every rank compresses each chunk and an
// all_to_all delivers chunk r of every rank to rank r; the owner decompresses the copies in rank
// order, averages, re-compresses its reduced chunk, and an all_gather hands every rank every
// compressed reduced chunk, which all ranks decompress identically: bit-identical averages, only
// compressed bytes on the wire, 2(n-1)/n of the compressed bucket per rank (a ring's volume). Pure
// functions on buffers; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/host_device.h"

namespace tt::parallel {

enum class GradCompression { kNone, kBf16, kInt8, kFp8 };

constexpr int64_t kInt8Block = 256;  // elements per shared scale of the int8 and fp8 payloads

GradCompression parse_grad_compression(const std::string& name);  // "none", "bf16", "int8", "fp8"; throws kConfig
const char* grad_compression_name(GradCompression c);

// Bytes of the compressed form of n elements.
size_t compressed_bytes(int64_t n, GradCompression c);
// Payload bytes per element on the wire (4, 2, 1 + 4/kInt8Block), for the cost model.
double payload_bytes_per_element(GradCompression c);
// int8 and fp8: a scale per block, then one byte per element.
inline bool block_scaled(GradCompression c) { return c == GradCompression::kInt8 || c == GradCompression::kFp8; }

// The 1-byte codes of the block-scaled payloads, shared by the CPU and CUDA codecs: y = x / scale
// (|y| <= block_code_max) to its code and back. NaN (a non-finite gradient) codes as 0; int8 rounds
// half to even and clamps to +-127, fp8 is E5M2 round-to-nearest-even, saturating.
TT_HOST_DEVICE inline float block_code_max(GradCompression c) {
  return c == GradCompression::kFp8 ? kFp8E5M2Max : 127.0f;
}
TT_HOST_DEVICE inline uint8_t encode_block_code(float y, GradCompression c) {
  if (y != y) return 0;
  if (c == GradCompression::kFp8) return f32_to_fp8(y, Fp8Format::kE5M2);
  return uint8_t(int8_t(fminf(fmaxf(rintf(y), -127.0f), 127.0f)));
}
TT_HOST_DEVICE inline float decode_block_code(uint8_t q, GradCompression c) {
  return c == GradCompression::kFp8 ? fp8_to_f32(q, Fp8Format::kE5M2) : float(int8_t(q));
}

// Splits n elements into `parts` contiguous chunks: parts + 1 offsets, chunk r = [b[r], b[r+1]).
// Boundaries fall on multiples of kInt8Block (so a chunked int8 compression quantises the same
// blocks as a whole one); the blocks are dealt out evenly, earlier chunks taking the remainder, so
// chunk 0 is the largest and, when n has fewer blocks than parts, the last chunks are empty. A pure
// function of (n, parts): every rank computes the same split.
std::vector<int64_t> chunk_bounds(int64_t n, int parts);

// out <- Q(in). Deterministic.
void compress(const float* in, int64_t n, GradCompression c, uint8_t* out);
// acc[i] += scale * deQ(in)[i]
void decompress_add(const uint8_t* in, int64_t n, GradCompression c, float scale, float* acc);

// With error feedback: g += residual; out <- Q(g); residual <- g - deQ(out). Without (residual
// == nullptr): out <- Q(g).
void compress_with_feedback(float* g, float* residual, int64_t n, GradCompression c, uint8_t* out);

}  // namespace tt::parallel
