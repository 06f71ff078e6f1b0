// CPU reference for SwiGLU: an elementwise loop over rows, split across threads, on the scalar bodies
// shared with the CUDA kernels (silu_scalar / silu_grad_scalar in swiglu.h).
#include <cstdint>

#include "kernels/swiglu/swiglu.h"

namespace tt::kernels {

void swiglu_forward_cpu(float* out, const float* inp, int64_t N, int I) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const float* gate = inp + n * 2 * I;
    const float* up = gate + I;
    float* o = out + n * I;
    for (int i = 0; i < I; ++i) o[i] = silu_scalar(gate[i]) * up[i];
  }
}

void swiglu_backward_cpu(float* dinp, const float* dout, const float* inp, int64_t N, int I) {
  if (dinp == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const float* gate = inp + n * 2 * I;
    const float* up = gate + I;
    const float* dy = dout + n * I;
    float* dgate = dinp + n * 2 * I;
    float* dup = dgate + I;
    for (int i = 0; i < I; ++i) {
      dgate[i] += dy[i] * up[i] * silu_grad_scalar(gate[i]);
      dup[i] += dy[i] * silu_scalar(gate[i]);
    }
  }
}

}  // namespace tt::kernels
