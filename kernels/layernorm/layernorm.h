// LayerNorm over the last dimension, as in GPT-2: biased variance, affine weight/bias, epsilon given
// (GPT-2 and most models: kLayerNormEps = 1e-5).
// Design: forward saves per-row mean and reciprocal std (N floats each) so backward needs no
// recomputation of the statistics. Backward accumulates (+=) into dinp, dweight, dbias (each may be
// nullptr). The parameter gradients reduce over rows; that reduction runs over channel chunks, each
// summing rows in order, so the result is bit-identical for any number of threads.
#pragma once

namespace tt::kernels {

constexpr float kLayerNormEps = 1e-5f;

// out[N,C] = (inp - mean) * rstd * weight + bias; mean[N], rstd[N] are written for backward.
void layernorm_forward_cpu(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                           const float* bias, int N, int C, float eps);

// Accumulates dinp[N,C], dweight[C], dbias[C] given dout[N,C] and the saved mean/rstd.
void layernorm_backward_cpu(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, const float* mean, const float* rstd, int N, int C);

}  // namespace tt::kernels

// ---- CUDA (layernorm.cu) -----------------------------------------------------------------------
// Device pointers; T is float or __nv_bfloat16 for activations, parameters and their gradients;
// mean/rstd are always fp32 (may be nullptr in forward) and statistics are computed in fp32.
// Asynchronous on `stream`. Backward accumulates (+=) like the CPU version, nullptr gradients are
// skipped, and dweight/dbias are deterministic (per-block partials over fixed row chunks, then a
// second pass in chunk order; no float atomics), so two runs are bit-identical.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void layernorm_forward_cuda(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                            const float* bias, int N, int C, float eps, cudaStream_t stream = 0);
void layernorm_forward_cuda(__nv_bfloat16* out, float* mean, float* rstd, const __nv_bfloat16* inp,
                            const __nv_bfloat16* weight, const __nv_bfloat16* bias, int N, int C, float eps,
                            cudaStream_t stream = 0);

// Fused residual + LayerNorm, one pass over the row: residual[N,C] = inp1 + inp2 (rounded to the
// storage type), out = LayerNorm(residual) computed from the STORED residual values, mean/rstd as
// above. `residual` may alias inp1 or inp2 (in-place residual stream); out must not alias any input.
void fused_residual_layernorm_forward_cuda(float* residual, float* out, float* mean, float* rstd, const float* inp1,
                                           const float* inp2, const float* weight, const float* bias, int N, int C,
                                           float eps, cudaStream_t stream = 0);
void fused_residual_layernorm_forward_cuda(__nv_bfloat16* residual, __nv_bfloat16* out, float* mean, float* rstd,
                                           const __nv_bfloat16* inp1, const __nv_bfloat16* inp2,
                                           const __nv_bfloat16* weight, const __nv_bfloat16* bias, int N, int C,
                                           float eps, cudaStream_t stream = 0);

void layernorm_backward_cuda(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                             const float* weight, const float* mean, const float* rstd, int N, int C,
                             cudaStream_t stream = 0);
void layernorm_backward_cuda(__nv_bfloat16* dinp, __nv_bfloat16* dweight, __nv_bfloat16* dbias,
                             const __nv_bfloat16* dout, const __nv_bfloat16* inp, const __nv_bfloat16* weight,
                             const float* mean, const float* rstd, int N, int C, cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
