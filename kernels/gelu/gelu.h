// GELU activation, tanh approximation (GPT-2): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
// Design: the scalar forward/derivative formulas are TT_HOST_DEVICE inline functions here so the
// CPU loop and the CUDA grid share one body. Backward accumulates (+=) into dinp.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace tt::kernels {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;

TT_HOST_DEVICE inline float gelu_scalar(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

// d gelu(x) / dx.
TT_HOST_DEVICE inline float gelu_grad_scalar(float x) {
  const float x2 = x * x;
  const float u = kGeluScale * (x + kGeluCubic * x2 * x);
  const float th = tanhf(u);
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * kGeluCubic * x2);
}

// out[i] = gelu(inp[i]). out may alias inp.
void gelu_forward_cpu(float* out, const float* inp, int64_t n);
// dinp[i] += gelu'(inp[i]) * dout[i].
void gelu_backward_cpu(float* dinp, const float* inp, const float* dout, int64_t n);

}  // namespace tt::kernels

// ---- CUDA (gelu.cu) ----------------------------------------------------------------------------
// Same contracts as the CPU functions, on device pointers; fp32 and bf16 storage (fp32 arithmetic,
// bf16 results rounded to nearest even). Asynchronous on `stream`; bit-reproducible.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void gelu_forward_cuda(float* out, const float* inp, int64_t n, cudaStream_t stream = 0);
void gelu_forward_cuda(__nv_bfloat16* out, const __nv_bfloat16* inp, int64_t n, cudaStream_t stream = 0);
void gelu_backward_cuda(float* dinp, const float* inp, const float* dout, int64_t n, cudaStream_t stream = 0);
void gelu_backward_cuda(__nv_bfloat16* dinp, const __nv_bfloat16* inp, const __nv_bfloat16* dout, int64_t n,
                        cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
