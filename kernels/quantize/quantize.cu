// CUDA quantisers (see quantize.h) on the scalar bodies the CPU reference uses.
//  * fp8: 32 x 32 tiles through shared memory, so the transposed layout is written coalesced; each
//    block folds its max |x| and counts into the outputs with one atomic each (max of non-negative
//    floats compares like their bits; integer sums), so the results do not depend on block order.
//  * int8 rows: one block per row (block max, then the row's codes). int8 tensor: a grid max into
//    a scratch word, then the codes; the dequantise factor is written by one thread at the end.
#include "kernels/common/cuda_common.cuh"
#include "kernels/common/cuda_scratch.cuh"
#include "kernels/quantize/quantize.h"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::to_f32;

constexpr int kTile = 32, kTileRows = 8;  // fp8 tiles: 32 x 32 elements, 32 x 8 threads

__device__ __forceinline__ void atomic_max_nonneg(float* addr, float v) {
  atomicMax(reinterpret_cast<unsigned int*>(addr), __float_as_uint(v));
}

// Block-wide max of non-negative values (NaN-propagating through their bits), to every thread.
__device__ __forceinline__ unsigned block_max_bits(unsigned v, unsigned* shared) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  unsigned m = lane < warps ? shared[lane] : 0u;
  for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
  return m;
}

template <typename T>
__global__ void quantize_fp8_kernel(uint8_t* codes, const T* x, int64_t rows, int cols, bool transpose, Fp8Format f,
                                    const float* scale, float* amax, uint32_t* overflow, uint32_t* underflow) {
  __shared__ uint8_t tile[kTile][kTile + 4];
  __shared__ float block_amax;
  __shared__ uint32_t block_over, block_under;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (tx == 0 && ty == 0) block_amax = 0.0f, block_over = 0, block_under = 0;
  __syncthreads();
  const int64_t r0 = int64_t(blockIdx.y) * kTile;
  const int c0 = blockIdx.x * kTile;
  const float s = scale[0];
  float m = 0.0f;
  uint32_t over = 0, under = 0;
  for (int i = ty; i < kTile; i += kTileRows) {
    const int64_t r = r0 + i;
    const int c = c0 + tx;
    if (r < rows && c < cols) {
      const float v = to_f32(x[r * cols + c]);
      bool o, u;
      const uint8_t code = fp8_quantize_scalar(v, s, f, &o, &u);
      m = fmaxf(m, fabsf(v));
      over += o;
      under += u;
      if (transpose)
        tile[tx][i] = code;
      else
        codes[r * cols + c] = code;
    }
  }
  if (transpose) {
    __syncthreads();
    for (int i = ty; i < kTile; i += kTileRows) {  // row c0 + i of the transposed [cols, rows] output
      const int c = c0 + i;
      const int64_t r = r0 + tx;
      if (c < cols && r < rows) codes[int64_t(c) * rows + r] = tile[i][tx];
    }
  }
  if (amax == nullptr) return;
  atomic_max_nonneg(&block_amax, m);
  if (over) atomicAdd(&block_over, over);
  if (under) atomicAdd(&block_under, under);
  __syncthreads();
  if (tx == 0 && ty == 0) {
    atomic_max_nonneg(amax, block_amax);
    if (block_over) atomicAdd(overflow, block_over);
    if (block_under) atomicAdd(underflow, block_under);
  }
}

template <typename T>
__global__ void quantize_int8_rows_kernel(int8_t* q, float* inv, const T* x, int cols) {
  __shared__ unsigned shared[32];
  __shared__ float row_scale;
  const int64_t r = blockIdx.x;
  const T* row = x + r * cols;
  float m = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = max_abs_nan(m, to_f32(row[c]));
  const float amax = __uint_as_float(block_max_bits(__float_as_uint(m), shared));
  if (threadIdx.x == 0) {
    float scale, factor;
    int8_factors(amax, &scale, &factor);
    row_scale = scale;
    inv[r] = factor;
  }
  __syncthreads();
  const float scale = row_scale;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) q[r * cols + c] = int8_quantize_scalar(to_f32(row[c]), scale);
}

template <typename T>
__global__ void abs_max_kernel(float* amax, const T* x, int64_t n) {
  __shared__ unsigned shared[32];
  float m = 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    m = max_abs_nan(m, to_f32(x[i]));
  const unsigned bits = block_max_bits(__float_as_uint(m), shared);
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned int*>(amax), bits);
}

template <typename T>
__global__ void quantize_int8_tensor_kernel(int8_t* q, const T* x, int64_t rows, int cols, bool transpose,
                                            const float* amax) {
  float scale, inv;
  int8_factors(amax[0], &scale, &inv);
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    q[transpose ? c * rows + r : i] = int8_quantize_scalar(to_f32(x[i]), scale);
  }
}

__global__ void int8_inv_kernel(float* inv, const float* amax) {
  float scale;
  int8_factors(amax[0], &scale, inv);
}

__global__ void fp8_update_scales_kernel(float* history, float* scale, float* scale_inv, const float* amax, int64_t n,
                                         int len, int pos, int margin) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n)
    fp8_update_scale(history + i * len, len, pos, amax[i], fp8_max(fp8_role_format(i)), margin, &scale[i],
                     &scale_inv[i]);
}

constexpr int kThreads = 256;

}  // namespace

template <typename T>
void quantize_fp8_cuda(uint8_t* codes, const T* x, int64_t rows, int cols, bool transpose, Fp8Format f,
                       const float* scale, float* amax, uint32_t* overflow, uint32_t* underflow, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid(unsigned(cuda::ceil_div(cols, kTile)), unsigned(cuda::ceil_div(rows, kTile)));
  quantize_fp8_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(codes, x, rows, cols, transpose, f, scale, amax,
                                                                   overflow, underflow);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void quantize_int8_rows_cuda(int8_t* q, float* inv, const T* x, int64_t rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  quantize_int8_rows_kernel<<<unsigned(rows), kThreads, 0, stream>>>(q, inv, x, cols);
  TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void quantize_int8_tensor_cuda(int8_t* q, float* inv, const T* x, int64_t rows, int cols, bool transpose,
                               cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  float* amax = cuda::cuda_scratch_as<float>(cuda::ScratchSlot::kQuantize, 1, stream);
  TT_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(float), stream));
  const int64_t n = rows * cols;
  abs_max_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(amax, x, n);
  TT_CUDA_LAUNCH_CHECK();
  quantize_int8_tensor_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(q, x, rows, cols,
                                                                                              transpose, amax);
  TT_CUDA_LAUNCH_CHECK();
  int8_inv_kernel<<<1, 1, 0, stream>>>(inv, amax);
  TT_CUDA_LAUNCH_CHECK();
}

void fp8_update_scales_cuda(float* history, float* scale, float* scale_inv, const float* amax, int64_t n, int len,
                            int pos, int margin, cudaStream_t stream) {
  if (n <= 0) return;
  fp8_update_scales_kernel<<<unsigned(cuda::ceil_div(n, kThreads)), kThreads, 0, stream>>>(history, scale, scale_inv,
                                                                                          amax, n, len, pos, margin);
  TT_CUDA_LAUNCH_CHECK();
}

#define TT_QUANTIZE_INSTANTIATE(T)                                                                                 \
  template void quantize_fp8_cuda<T>(uint8_t*, const T*, int64_t, int, bool, Fp8Format, const float*, float*,    \
                                     uint32_t*, uint32_t*, cudaStream_t);                                         \
  template void quantize_int8_rows_cuda<T>(int8_t*, float*, const T*, int64_t, int, cudaStream_t);                 \
  template void quantize_int8_tensor_cuda<T>(int8_t*, float*, const T*, int64_t, int, bool, cudaStream_t);
TT_QUANTIZE_INSTANTIATE(float)
TT_QUANTIZE_INSTANTIATE(bf16)
#undef TT_QUANTIZE_INSTANTIATE

}  // namespace tt::kernels
