// SwiGLU gating (Llama's MLP): out = silu(gate) ⊙ up with silu(x) = x · sigmoid(x), on the output of
// the fused gate/up projection: inp[N, 2I] holds, per row, the I gate values and then the I up values
// (the gate_proj and up_proj weights stored one after the other form one [2I, C] GEMM).
// Design: elementwise, so forward and backward are TT_HOST_DEVICE bodies shared by the CPU loop and the
// CUDA grid (fp32 math; bf16 storage on CUDA rounds once per output). Backward accumulates (+=) into
// dinp like the other ops' input gradients.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace tt::kernels {

// silu(x) = x / (1 + e^−x), the form PyTorch's silu evaluates.
TT_HOST_DEVICE inline float silu_scalar(float x) { return x / (1.0f + expf(-x)); }

// d silu(x) / dx = s · (1 + x · (1 − s)), s = sigmoid(x).
TT_HOST_DEVICE inline float silu_grad_scalar(float x) {
  const float s = 1.0f / (1.0f + expf(-x));
  return s * (1.0f + x * (1.0f - s));
}

// out[N, I] = silu(inp[n, i]) · inp[n, I + i].
void swiglu_forward_cpu(float* out, const float* inp, int64_t N, int I);

// dinp[N, 2I] += (d gate | d up) of dout[N, I]: d gate = dout · up · silu'(gate),
// d up = dout · silu(gate), silu'(x) = s(x) · (1 + x · (1 − s(x))), s = sigmoid.
void swiglu_backward_cpu(float* dinp, const float* dout, const float* inp, int64_t N, int I);

}  // namespace tt::kernels

// ---- CUDA (swiglu.cu) --------------------------------------------------------------------------
// Same contracts on device pointers; T is float or __nv_bfloat16. Asynchronous on `stream`.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void swiglu_forward_cuda(float* out, const float* inp, int64_t N, int I, cudaStream_t stream = 0);
void swiglu_forward_cuda(__nv_bfloat16* out, const __nv_bfloat16* inp, int64_t N, int I, cudaStream_t stream = 0);
void swiglu_backward_cuda(float* dinp, const float* dout, const float* inp, int64_t N, int I, cudaStream_t stream = 0);
void swiglu_backward_cuda(__nv_bfloat16* dinp, const __nv_bfloat16* dout, const __nv_bfloat16* inp, int64_t N, int I,
                          cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
