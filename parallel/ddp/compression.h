// Gradient payload compression for the all-reduce: bf16 (round to nearest even) and int8 with one
// fp32 absmax scale per block of kInt8Block elements, plus the error-feedback residual that carries
// what quantisation dropped into the next step (without it, gradients smaller than half a
// quantisation step are lost forever).
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

namespace tt::parallel {

enum class GradCompression { kNone, kBf16, kInt8 };

constexpr int64_t kInt8Block = 256;

GradCompression parse_grad_compression(const std::string& name);  // "none", "bf16", "int8"; throws kConfig
const char* grad_compression_name(GradCompression c);

// Bytes of the compressed form of n elements.
size_t compressed_bytes(int64_t n, GradCompression c);
// Payload bytes per element on the wire (4, 2, 1 + 4/kInt8Block), for the cost model.
double payload_bytes_per_element(GradCompression c);

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
