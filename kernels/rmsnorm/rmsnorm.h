// RMSNorm over the last dimension (Llama, Mistral): out = inp · rstd · weight with
// rstd = 1 / sqrt(mean(inp²) + eps), no mean subtraction and no bias. The statistics are fp32 and
// the product is formed as (inp · rstd) · weight, the order Hugging Face's LlamaRMSNorm uses.
// Design: as LayerNorm (layernorm.h): forward saves rstd[N] so backward needs no recomputation;
// backward accumulates (+=) into dinp and dweight (either may be nullptr); dweight reduces over rows
// by column chunks, each summing rows in order, so it is bit-identical for any number of threads.
#pragma once

namespace tt::kernels {

// out[N,C] = inp · rstd · weight; rstd[N] (may be nullptr) is written for backward.
void rmsnorm_forward_cpu(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps);

// Accumulates dinp[N,C] and dweight[C] given dout[N,C] and the saved rstd:
//   dinp += rstd · (dout⊙w − x̂ · mean(dout⊙w⊙x̂)),  x̂ = inp · rstd;   dweight += Σ_rows dout ⊙ x̂.
void rmsnorm_backward_cpu(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                          const float* rstd, int N, int C);

}  // namespace tt::kernels

// ---- CUDA (rmsnorm.cu) -------------------------------------------------------------------------
// Device pointers; T is float or __nv_bfloat16 for activations, weights and their gradients; rstd is
// always fp32 (may be nullptr in forward) and the statistics are computed in fp32. Asynchronous on
// `stream`. Backward accumulates (+=) like the CPU version, skips nullptr gradients, and dweight is
// deterministic (per-block partials over fixed row chunks, then a second pass in chunk order; no
// float atomics), as layernorm.cu does.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void rmsnorm_forward_cuda(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps,
                          cudaStream_t stream = 0);
void rmsnorm_forward_cuda(__nv_bfloat16* out, float* rstd, const __nv_bfloat16* inp, const __nv_bfloat16* weight, int N,
                          int C, float eps, cudaStream_t stream = 0);

// Fused residual + RMSNorm, one pass over the row: residual[N,C] = inp1 + inp2 (rounded to the storage
// type), out = RMSNorm(residual) computed from the STORED residual values. `residual` may alias inp1
// or inp2; out must not alias any input.
void fused_residual_rmsnorm_forward_cuda(float* residual, float* out, float* rstd, const float* inp1, const float* inp2,
                                         const float* weight, int N, int C, float eps, cudaStream_t stream = 0);
void fused_residual_rmsnorm_forward_cuda(__nv_bfloat16* residual, __nv_bfloat16* out, float* rstd,
                                         const __nv_bfloat16* inp1, const __nv_bfloat16* inp2,
                                         const __nv_bfloat16* weight, int N, int C, float eps, cudaStream_t stream = 0);

void rmsnorm_backward_cuda(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                           const float* rstd, int N, int C, cudaStream_t stream = 0);
void rmsnorm_backward_cuda(__nv_bfloat16* dinp, __nv_bfloat16* dweight, const __nv_bfloat16* dout,
                           const __nv_bfloat16* inp, const __nv_bfloat16* weight, const float* rstd, int N, int C,
                           cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
