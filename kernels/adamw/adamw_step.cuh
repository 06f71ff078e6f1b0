// What every AdamW CUDA kernel takes per call and writes per element, shared by adamw.cu and
// state8.cu: the step's hyper-parameters with their bias corrections (computed once on the host, in
// double, as the CPU versions do) and the bf16 working copy of an updated fp32 value, rounded to
// nearest even or stochastically by the stateless hash of (seed, step, global index) (adamw.h).
// Device code only (included by .cu files).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/adamw/adamw.h"

namespace tt::kernels {

struct AdamWStep {
  float lr, beta1, beta2, eps, weight_decay, bc1, bc2, grad_scale;
  int64_t step;
};

inline AdamWStep make_adamw_step(const AdamWHyper& h, float grad_scale) {
  float bc1, bc2;
  adamw_bias_corrections(h, &bc1, &bc2);
  return AdamWStep{h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, bc1, bc2, grad_scale, h.step};
}

// param_bf16[i] = bf16(p) as `rounding` says for element i of this call.
__device__ __forceinline__ void write_bf16_copy(__nv_bfloat16* param_bf16, float p, int64_t i, const AdamWStep& s,
                                                const BF16Rounding& rounding) {
  if (rounding.stochastic) {
    const uint32_t bits = adamw_rounding_bits(rounding.seed, s.step, rounding.index_base + i);
    param_bf16[i] = __ushort_as_bfloat16(f32_to_bf16_stochastic(p, bits));
  } else {
    param_bf16[i] = __float2bfloat16_rn(p);
  }
}

}  // namespace tt::kernels
