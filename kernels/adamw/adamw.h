// AdamW update on fp32 parameters with fp32 moments (decoupled weight decay, as PyTorch and llm.c).
// Design: the per-element update is a TT_HOST_DEVICE inline function shared by the CPU loop and the
// CUDA kernel; bias corrections are computed once per call (in double) by the caller-side wrapper.
// grad_scale multiplies the gradient first (1/loss_scale, or the clip factor).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace tt::kernels {

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // >= 1; used for bias correction
};

// One element: g = grad*grad_scale; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²;
// param -= lr * (m/bc1 / (sqrt(v/bc2) + eps) + weight_decay * param), bc_i = 1 - beta_i^step.
TT_HOST_DEVICE inline void adamw_element(float& param, float& m, float& v, float grad, float lr,
                                         float beta1, float beta2, float eps, float weight_decay,
                                         float bias_correction1, float bias_correction2,
                                         float grad_scale) {
  const float g = grad * grad_scale;
  m = beta1 * m + (1.0f - beta1) * g;
  v = beta2 * v + (1.0f - beta2) * g * g;
  const float mhat = m / bias_correction1;
  const float vhat = v / bias_correction2;
  param -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * param);
}

void adamw_update_cpu(float* param, float* m, float* v, const float* grad, int64_t n,
                      const AdamWHyper& h, float grad_scale);

}  // namespace tt::kernels
