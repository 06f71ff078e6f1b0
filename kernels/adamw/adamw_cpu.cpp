// CPU reference for the AdamW step: bias corrections computed once in double, then the shared
// per-element body from adamw.h over all elements in parallel.
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "kernels/adamw/adamw.h"

namespace tt::kernels {

void adamw_bias_corrections(const AdamWHyper& h, float* bc1, float* bc2) {
  TT_ASSERT(h.step >= 1, "adamw: step must be >= 1, got ", h.step);
  *bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), h.step));
  *bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), h.step));
}

void adamw_update_cpu(float* param, float* m, float* v, const float* grad, int64_t n, const AdamWHyper& h,
                      float grad_scale) {
  float bc1, bc2;
  adamw_bias_corrections(h, &bc1, &bc2);
  const float lr = h.lr, b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weight_decay;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    adamw_element(param[i], m[i], v[i], grad[i], lr, b1, b2, eps, wd, bc1, bc2, grad_scale);
}

}  // namespace tt::kernels
