// Gradient payload compression for the all-reduce: bf16 (round to nearest even) and int8 with one
// fp32 absmax scale per block of kInt8Block elements, plus the error-feedback residual that carries
// what quantisation dropped into the next step (without it, gradients smaller than half a
// quantisation step are lost forever).
//
// Design: a compressed all-reduce is an all-gather of every rank's compressed bucket followed by a
// local decompress-and-sum in rank order, so every rank computes bit-identical averages (no
// reduction tree re-rounds partial sums) and the wire carries only compressed bytes. Pure functions
// on buffers; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tt::parallel {

enum class GradCompression { kNone, kBf16, kInt8 };

constexpr int64_t kInt8Block = 256;

GradCompression parse_grad_compression(const std::string& name);  // "none", "bf16", "int8"; throws kConfig
const char* grad_compression_name(GradCompression c);

// Bytes of the compressed form of n elements.
size_t compressed_bytes(int64_t n, GradCompression c);
// Payload bytes per element on the wire (4, 2, 1 + 4/kInt8Block), for the cost model.
double payload_bytes_per_element(GradCompression c);

// out <- Q(in). Deterministic.
void compress(const float* in, int64_t n, GradCompression c, uint8_t* out);
// acc[i] += scale * deQ(in)[i]
void decompress_add(const uint8_t* in, int64_t n, GradCompression c, float scale, float* acc);

// With error feedback: g += residual; out <- Q(g); residual <- g - deQ(out). Without (residual
// == nullptr): out <- Q(g).
void compress_with_feedback(float* g, float* residual, int64_t n, GradCompression c, uint8_t* out);

}  // namespace tt::parallel
