// AdamW update on fp32 parameters with fp32 moments (decoupled weight decay, as PyTorch and llm.c).
// Design: the per-element update is a TT_HOST_DEVICE inline function shared by the CPU loop and the
// CUDA kernel; bias corrections are computed once per call (in double) by the caller-side wrapper.
// grad_scale multiplies the gradient first (1/loss_scale, or the clip factor).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace tt::kernels {

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // >= 1; used for bias correction
};

// One element: g = grad*grad_scale; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²;
// param -= lr * (m/bc1 / (sqrt(v/bc2) + eps) + weight_decay * param), bc_i = 1 - beta_i^step.
TT_HOST_DEVICE inline void adamw_element(float& param, float& m, float& v, float grad, float lr, float beta1,
                                         float beta2, float eps, float weight_decay, float bias_correction1,
                                         float bias_correction2, float grad_scale) {
  const float g = grad * grad_scale;
  m = beta1 * m + (1.0f - beta1) * g;
  v = beta2 * v + (1.0f - beta2) * g * g;
  const float mhat = m / bias_correction1;
  const float vhat = v / bias_correction2;
  param -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * param);
}

// bc1 = 1 - beta1^step, bc2 = 1 - beta2^step, in double, rounded once: what every AdamW variant
// (CPU and CUDA, every state dtype) divides by.
void adamw_bias_corrections(const AdamWHyper& h, float* bc1, float* bc2);

void adamw_update_cpu(float* param, float* m, float* v, const float* grad, int64_t n, const AdamWHyper& h,
                      float grad_scale);

// ---- bf16 parameter copies with stochastic rounding (shared by adamw.cu and the tests) -----------
// Random bits for element `index` of step `step`: a stateless hash (splitmix64 finaliser) of
// (seed, step, index), so the rounding is deterministic per step, independent of the launch shape,
// and identical for any sharding when index counts from the start of the full parameter vector.
TT_HOST_DEVICE inline uint32_t adamw_rounding_bits(uint64_t seed, int64_t step, int64_t index) {
  uint64_t z = seed ^ (static_cast<uint64_t>(step) * 0x9E3779B97F4A7C15ull) ^
               (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

// fp32 -> bf16 bits, rounding up with probability (dropped low 16 bits) / 2^16: add 16 random bits
// below the kept mantissa and truncate. NaN and infinities take the round-to-nearest path.
TT_HOST_DEVICE inline uint16_t f32_to_bf16_stochastic(float x, uint32_t random_bits) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) {  // inf / NaN
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
    return static_cast<uint16_t>(u >> 16);
  }
  u += random_bits & 0xffffu;
  return static_cast<uint16_t>(u >> 16);
}

// How adamw_update_mixed_cuda writes the bf16 parameter copy.
struct BF16Rounding {
  bool stochastic = false;  // false: round to nearest even
  uint64_t seed = 0;        // with stochastic: the run's seed (the step comes from AdamWHyper)
  int64_t index_base = 0;   // global index of element 0 of this call (ZeRO shards, buckets)
};

}  // namespace tt::kernels

// ---- CUDA (adamw.cu) ---------------------------------------------------------------------------
// Device pointers; fp32 master weights and fp32 moments; gradients fp32 or bf16 (read, never
// written). Bias corrections are computed on the host once per call (double), as the CPU version.
// Asynchronous on `stream`; elementwise, hence bit-reproducible.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void adamw_update_cuda(float* param, float* m, float* v, const float* grad, int64_t n, const AdamWHyper& h,
                       float grad_scale, cudaStream_t stream = 0);
void adamw_update_cuda(float* param, float* m, float* v, const __nv_bfloat16* grad, int64_t n, const AdamWHyper& h,
                       float grad_scale, cudaStream_t stream = 0);

// Mixed precision: updates the fp32 master weights like adamw_update_cuda, then writes
// param_bf16[i] = bf16(master[i]) rounded as `rounding` says (param_bf16 may be nullptr).
void adamw_update_mixed_cuda(float* master, float* m, float* v, __nv_bfloat16* param_bf16, const float* grad, int64_t n,
                             const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding,
                             cudaStream_t stream = 0);
void adamw_update_mixed_cuda(float* master, float* m, float* v, __nv_bfloat16* param_bf16, const __nv_bfloat16* grad,
                             int64_t n, const AdamWHyper& h, float grad_scale, const BF16Rounding& rounding,
                             cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
