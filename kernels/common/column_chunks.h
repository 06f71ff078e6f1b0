// Deterministic row reductions for CPU kernels: a parameter gradient that sums over rows (bias,
// layernorm weight, embedding) is split into fixed-width column chunks; one thread owns a chunk and
// adds the rows in index order. Every output element therefore sees the same sequence of float
// additions for any thread count, without atomics or per-call buffers.
#pragma once

namespace tt::kernels {

// Column-chunk width in floats: 256 bytes, a few cache lines, small enough for a stack accumulator.
constexpr int kColumnChunk = 64;

inline int column_chunk_count(int columns) { return (columns + kColumnChunk - 1) / kColumnChunk; }

}  // namespace tt::kernels
