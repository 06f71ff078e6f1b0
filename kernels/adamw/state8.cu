// CUDA kernels for the compact AdamW states (state8.h). 8-bit state: one thread block of 256
// threads per quantisation block of the global 256-grid (thread t owns global index k·256 + t;
// threads outside the run idle), the maps copied from the kernel parameters into shared memory,
// the block's new absmax a NaN-keeping max-reduction. bf16 state: a grid-stride elementwise
// kernel like adamw.cu. Built with --fmad=false (CMakeLists.txt) so adamw_element and the
// (de)quantisation are the same rounded fp32 operations as the CPU reference, bit for bit; IEEE
// division and square root are nvcc's defaults. The bf16 parameter copy is written exactly as
// adamw_update_mixed_cuda writes it.
#include <climits>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/adamw/adamw.h"
#include "kernels/adamw/adamw_step.cuh"
#include "kernels/adamw/state8.h"
#include "kernels/common/cuda_common.cuh"

namespace tt::kernels {

namespace {

using cuda::bf16;
using cuda::to_f32;

constexpr int kThreads = 256;
static_assert(kThreads == kState8Block, "one thread per element of a quantisation block");

// A map by value: 1 KiB of kernel parameters, read once per thread into shared memory.
struct Map {
  float v[256];
};

Map device_map(bool is_signed) {
  Map m;
  const auto& host = cached_dynamic_map(is_signed);
  std::memcpy(m.v, host.data(), sizeof(m.v));
  return m;
}

unsigned state8_grid(int64_t global_begin, int64_t n) {
  const int64_t blocks = state8_blocks(global_begin, n);
  TT_ASSERT(blocks <= INT_MAX, "state8: ", blocks, " blocks exceed the grid");
  return static_cast<unsigned>(blocks);
}

__device__ __forceinline__ float warp_absmax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = state8_absmax_combine(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Absmax over the block of two values at once (every thread gets both). `shared` holds 2 × 8.
__device__ __forceinline__ void block_absmax2(float& a, float& b, float (*shared)[kThreads / 32]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  a = warp_absmax(a);
  b = warp_absmax(b);
  if (lane == 0) shared[0][warp] = a, shared[1][warp] = b;
  __syncthreads();
  a = lane < kThreads / 32 ? shared[0][lane] : 0.0f;
  b = lane < kThreads / 32 ? shared[1][lane] : 0.0f;
  a = warp_absmax(a);
  b = warp_absmax(b);
}

// Local index of this thread's element in the run, and whether it lies in the run.
__device__ __forceinline__ int64_t local_index(int64_t global_begin, int64_t n, bool* valid) {
  const int64_t global = (global_begin / kState8Block + blockIdx.x) * kState8Block + threadIdx.x;
  const int64_t i = global - global_begin;
  *valid = i >= 0 && i < n;
  return i;
}

__global__ void __launch_bounds__(kThreads)
    quantize_kernel(uint8_t* __restrict__ codes, float* __restrict__ absmax, const float* __restrict__ x, int64_t n,
                    int64_t global_begin, uint8_t zero_code, const __grid_constant__ Map map) {
  __shared__ float smap[256];
  __shared__ float red[2][kThreads / 32];
  smap[threadIdx.x] = map.v[threadIdx.x];
  bool valid;
  const int64_t i = local_index(global_begin, n, &valid);
  const float xi = valid ? x[i] : 0.0f;
  float amax = fabsf(xi), unused = 0.0f;
  block_absmax2(amax, unused, red);  // also orders the smap stores before the reads below
  if (valid) codes[i] = quantize_in_block(smap, xi, amax, zero_code);
  if (threadIdx.x == 0) absmax[blockIdx.x] = amax;
}

__global__ void __launch_bounds__(kThreads)
    dequantize_kernel(float* __restrict__ x, const uint8_t* __restrict__ codes, const float* __restrict__ absmax,
                      int64_t n, int64_t global_begin, const __grid_constant__ Map map) {
  __shared__ float smap[256];
  smap[threadIdx.x] = map.v[threadIdx.x];
  __syncthreads();
  bool valid;
  const int64_t i = local_index(global_begin, n, &valid);
  if (valid) x[i] = dequantize_code(smap, codes[i], absmax[blockIdx.x]);
}

// param_bf16 == nullptr: fp32 update only.
template <typename G>
__global__ void __launch_bounds__(kThreads)
    state8_update_kernel(float* __restrict__ param, uint8_t* __restrict__ m_codes, float* __restrict__ m_absmax,
                         uint8_t* __restrict__ v_codes, float* __restrict__ v_absmax, bf16* __restrict__ param_bf16,
                         const G* __restrict__ grad, int64_t n, int64_t global_begin, AdamWStep s,
                         BF16Rounding rounding, const __grid_constant__ Map signed_map,
                         const __grid_constant__ Map unsigned_map) {
  __shared__ float smap[256], umap[256];
  __shared__ float red[2][kThreads / 32];
  smap[threadIdx.x] = signed_map.v[threadIdx.x];
  umap[threadIdx.x] = unsigned_map.v[threadIdx.x];
  __syncthreads();
  bool valid;
  const int64_t i = local_index(global_begin, n, &valid);
  float m = 0.0f, v = 0.0f;
  if (valid) {
    m = dequantize_code(smap, m_codes[i], m_absmax[blockIdx.x]);
    v = dequantize_code(umap, v_codes[i], v_absmax[blockIdx.x]);
    float p = param[i];
    adamw_element(p, m, v, to_f32(grad[i]), s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.bc1, s.bc2, s.grad_scale);
    param[i] = p;
    if (param_bf16 != nullptr) write_bf16_copy(param_bf16, p, i, s, rounding);
  }
  // Every thread has read this block's absmax entries before the reduction's __syncthreads.
  float new_am = fabsf(m), new_av = fabsf(v);
  block_absmax2(new_am, new_av, red);
  if (valid) {
    m_codes[i] = quantize_in_block(smap, m, new_am, state8_zero_code(true));
    v_codes[i] = quantize_in_block(umap, v, new_av, state8_zero_code(false));
  }
  if (threadIdx.x == 0) m_absmax[blockIdx.x] = new_am, v_absmax[blockIdx.x] = new_av;
}

template <typename G>
__global__ void bf16_state_update_kernel(float* __restrict__ param, uint16_t* __restrict__ m, uint16_t* __restrict__ v,
                                         bf16* __restrict__ param_bf16, const G* __restrict__ grad, int64_t n,
                                         AdamWStep s, BF16Rounding rounding) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    float p = param[i], mi = bf16_to_f32(m[i]), vi = bf16_to_f32(v[i]);
    adamw_element(p, mi, vi, to_f32(grad[i]), s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.bc1, s.bc2,
                  s.grad_scale);
    param[i] = p;
    m[i] = f32_to_bf16(mi);
    v[i] = f32_to_bf16(vi);
    if (param_bf16 != nullptr) write_bf16_copy(param_bf16, p, i, s, rounding);
  }
}

template <typename G>
void launch_state8(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax, bf16* param_bf16,
                   const G* grad, int64_t n, int64_t global_begin, const AdamWHyper& h, float grad_scale,
                   const BF16Rounding& rounding, cudaStream_t stream) {
  const AdamWStep s = make_adamw_step(h, grad_scale);
  const unsigned grid = state8_grid(global_begin, n);
  if (grid == 0) return;
  state8_update_kernel<<<grid, kThreads, 0, stream>>>(param, m_codes, m_absmax, v_codes, v_absmax, param_bf16, grad, n,
                                                      global_begin, s, rounding, device_map(true), device_map(false));
  TT_CUDA_LAUNCH_CHECK();
}

template <typename G>
void launch_bf16_state(float* param, bf16* m, bf16* v, bf16* param_bf16, const G* grad, int64_t n, const AdamWHyper& h,
                       float grad_scale, const BF16Rounding& rounding, cudaStream_t stream) {
  const AdamWStep s = make_adamw_step(h, grad_scale);
  if (n <= 0) return;
  bf16_state_update_kernel<<<cuda::elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(
      param, reinterpret_cast<uint16_t*>(m), reinterpret_cast<uint16_t*>(v), param_bf16, grad, n, s, rounding);
  TT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void quantize_state8_cuda(uint8_t* codes, float* absmax, const float* x, int64_t n, int64_t global_begin,
                          bool is_signed, cudaStream_t stream) {
  const unsigned grid = state8_grid(global_begin, n);
  if (grid == 0) return;
  quantize_kernel<<<grid, kThreads, 0, stream>>>(codes, absmax, x, n, global_begin, state8_zero_code(is_signed),
                                                 device_map(is_signed));
  TT_CUDA_LAUNCH_CHECK();
}

void dequantize_state8_cuda(float* x, const uint8_t* codes, const float* absmax, int64_t n, int64_t global_begin,
                            bool is_signed, cudaStream_t stream) {
  const unsigned grid = state8_grid(global_begin, n);
  if (grid == 0) return;
  dequantize_kernel<<<grid, kThreads, 0, stream>>>(x, codes, absmax, n, global_begin, device_map(is_signed));
  TT_CUDA_LAUNCH_CHECK();
}

void adamw_update_state8_cuda(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                              const float* grad, int64_t n, int64_t global_begin, const AdamWHyper& h, float grad_scale,
                              cudaStream_t stream) {
  launch_state8(param, m_codes, m_absmax, v_codes, v_absmax, nullptr, grad, n, global_begin, h, grad_scale,
                BF16Rounding{}, stream);
}
void adamw_update_state8_cuda(float* param, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                              const bf16* grad, int64_t n, int64_t global_begin, const AdamWHyper& h, float grad_scale,
                              cudaStream_t stream) {
  launch_state8(param, m_codes, m_absmax, v_codes, v_absmax, nullptr, grad, n, global_begin, h, grad_scale,
                BF16Rounding{}, stream);
}
void adamw_update_state8_mixed_cuda(float* master, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                                    bf16* param_bf16, const float* grad, int64_t n, int64_t global_begin,
                                    const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding,
                                    cudaStream_t stream) {
  launch_state8(master, m_codes, m_absmax, v_codes, v_absmax, param_bf16, grad, n, global_begin, h, grad_scale,
                rounding, stream);
}
void adamw_update_state8_mixed_cuda(float* master, uint8_t* m_codes, float* m_absmax, uint8_t* v_codes, float* v_absmax,
                                    bf16* param_bf16, const bf16* grad, int64_t n, int64_t global_begin,
                                    const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding,
                                    cudaStream_t stream) {
  launch_state8(master, m_codes, m_absmax, v_codes, v_absmax, param_bf16, grad, n, global_begin, h, grad_scale,
                rounding, stream);
}

void adamw_update_bf16_state_cuda(float* param, bf16* m, bf16* v, const float* grad, int64_t n, const AdamWHyper& h,
                                  float grad_scale, cudaStream_t stream) {
  launch_bf16_state(param, m, v, nullptr, grad, n, h, grad_scale, BF16Rounding{}, stream);
}
void adamw_update_bf16_state_cuda(float* param, bf16* m, bf16* v, const bf16* grad, int64_t n, const AdamWHyper& h,
                                  float grad_scale, cudaStream_t stream) {
  launch_bf16_state(param, m, v, nullptr, grad, n, h, grad_scale, BF16Rounding{}, stream);
}
void adamw_update_bf16_state_mixed_cuda(float* master, bf16* m, bf16* v, bf16* param_bf16, const float* grad, int64_t n,
                                        const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding,
                                        cudaStream_t stream) {
  launch_bf16_state(master, m, v, param_bf16, grad, n, h, grad_scale, rounding, stream);
}
void adamw_update_bf16_state_mixed_cuda(float* master, bf16* m, bf16* v, bf16* param_bf16, const bf16* grad, int64_t n,
                                        const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding,
                                        cudaStream_t stream) {
  launch_bf16_state(master, m, v, param_bf16, grad, n, h, grad_scale, rounding, stream);
}

}  // namespace tt::kernels
