// Device-side helpers shared by the CUDA kernels in kernels/*/*.cu: fp32/bf16 load-store, warp and
// block reductions with a FIXED combination tree, launch checking and grid sizing.
// Design: every reduction here combines values in an order that depends only on blockDim and the
// data layout (never on scheduling or atomics), so kernels built on them are bit-reproducible run to
// run on the same device. Storage types are float or __nv_bfloat16; arithmetic is always fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "core/error.h"

// After a <<<>>> launch: turns a launch-configuration error into a tt::Error at this file:line.
#define TT_CUDA_LAUNCH_CHECK() TT_CUDA_CHECK(cudaGetLastError())

namespace tt::kernels::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float x) {
  return __float2bfloat16_rn(x);  // round to nearest even, as tt::f32_to_bf16 on the host
}

// Butterfly reductions: every lane ends with the same, bit-identical value (each step adds the same
// two operands on both partner lanes; fp32 addition is commutative).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); the result is returned to
// every thread. `shared` must hold 32 values of T. Contains __syncthreads(): call from all threads.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = lane < warps ? shared[lane] : T(0);
  return warp_sum(total);
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grid for a grid-stride elementwise loop over n items with `threads` threads per block.
inline unsigned elementwise_blocks(int64_t n, int threads) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(n, threads), 1 << 16)));
}

}  // namespace tt::kernels::cuda
