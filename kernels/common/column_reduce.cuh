// Deterministic column sums on the GPU (bias gradients, LayerNorm parameter gradients): the GPU
// counterpart of column_chunks.h.
// Design: two passes, no float atomics. Pass 1 splits the rows into fixed chunks of
// kColumnReduceRows; block (column tile of 32, chunk) sums its rows in a fixed order (8 row lanes,
// then the 8 lane sums in order) into partials[chunk][col]. Pass 2 adds the chunk partials in chunk
// order and accumulates (+=) into the output. The chunking depends only on (rows, cols), so the
// result is bit-identical run to run. Partials live in the kPartials scratch slot of the stream.
#pragma once

#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_scratch.cuh"

namespace tt::kernels::cuda {

constexpr int kColumnReduceRows = 256;  // rows per chunk in pass 1
constexpr int kColumnTile = 32;         // columns per block (one warp wide)
constexpr int kRowLanes = 8;            // warps per block in pass 1

// partials[chunk * cols + col] = Σ_{rows r of chunk} value(r, col), summed in a fixed order.
// `value(r, c)` is a device functor returning float.
template <typename F>
__global__ void column_partials_kernel(float* __restrict__ partials, int rows, int cols, F value) {
  __shared__ float lanes[kRowLanes][kColumnTile + 1];
  const int tx = threadIdx.x % kColumnTile, ty = threadIdx.x / kColumnTile;
  const int col = blockIdx.x * kColumnTile + tx;
  const int r0 = blockIdx.y * kColumnReduceRows;
  const int r1 = min(rows, r0 + kColumnReduceRows);
  float s = 0.0f;
  if (col < cols)
    for (int r = r0 + ty; r < r1; r += kRowLanes) s += value(r, col);
  lanes[ty][tx] = s;
  __syncthreads();
  if (ty == 0 && col < cols) {
    float t = 0.0f;
#pragma unroll
    for (int k = 0; k < kRowLanes; ++k) t += lanes[k][tx];
    partials[static_cast<int64_t>(blockIdx.y) * cols + col] = t;
  }
}

// out[col] += Σ_chunk partials[chunk * cols + col] (chunks in order), rounded once into T.
template <typename T>
__global__ void accumulate_partials_kernel(T* __restrict__ out, const float* __restrict__ partials, int chunks,
                                           int cols) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  float s = 0.0f;
  for (int k = 0; k < chunks; ++k) s += partials[static_cast<int64_t>(k) * cols + col];
  out[col] = from_f32<T>(to_f32(out[col]) + s);
}

inline int column_reduce_chunks(int rows) { return static_cast<int>(ceil_div(rows, kColumnReduceRows)); }

// Launches pass 1 for `value` over [rows, cols] into `partials` (chunks × cols floats).
template <typename F>
void launch_column_partials(float* partials, int rows, int cols, F value, cudaStream_t stream) {
  const int chunks = column_reduce_chunks(rows);
  TT_ASSERT(chunks <= 65535, "column reduction: ", rows, " rows exceed the grid limit");
  dim3 grid(static_cast<unsigned>(ceil_div(cols, kColumnTile)), static_cast<unsigned>(chunks));
  column_partials_kernel<<<grid, kColumnTile * kRowLanes, 0, stream>>>(partials, rows, cols, value);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void launch_accumulate_partials(T* out, const float* partials, int chunks, int cols, cudaStream_t stream) {
  accumulate_partials_kernel<<<static_cast<unsigned>(ceil_div(cols, 256)), 256, 0, stream>>>(out, partials, chunks,
                                                                                             cols);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
struct RowMajorValue {
  const T* x;
  int ld;
  __device__ float operator()(int r, int c) const { return to_f32(x[static_cast<int64_t>(r) * ld + c]); }
};

// out[c] += Σ_r x[r, c] for row-major x[rows, cols]; deterministic (see above).
template <typename T>
void column_sum_accumulate(T* out, const T* x, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int chunks = column_reduce_chunks(rows);
  float* partials = cuda_scratch_as<float>(ScratchSlot::kPartials, static_cast<size_t>(chunks) * cols, stream);
  launch_column_partials(partials, rows, cols, RowMajorValue<T>{x, cols}, stream);
  launch_accumulate_partials(out, partials, chunks, cols, stream);
}

}  // namespace tt::kernels::cuda
