// CPU reference for GELU (tanh approximation): an elementwise loop over the shared scalar body in
// gelu.h, split across threads.
#include <cstdint>

#include "kernels/gelu/gelu.h"

namespace tt::kernels {

void gelu_forward_cpu(float* out, const float* inp, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_scalar(inp[i]);
}

void gelu_backward_cpu(float* dinp, const float* inp, const float* dout, int64_t n) {
  if (dinp == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dinp[i] += gelu_grad_scalar(inp[i]) * dout[i];
}

}  // namespace tt::kernels
