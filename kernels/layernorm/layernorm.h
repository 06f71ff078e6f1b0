// LayerNorm over the last dimension, as in GPT-2: eps = 1e-5, biased variance, affine weight/bias.
// Design: forward saves per-row mean and reciprocal std (N floats each) so backward needs no
// recomputation of the statistics. Backward accumulates (+=) into dinp, dweight, dbias (each may be
// nullptr). The parameter gradients reduce over rows; that reduction runs over channel chunks, each
// summing rows in order, so the result is bit-identical for any number of threads.
#pragma once

namespace tt::kernels {

constexpr float kLayerNormEps = 1e-5f;

// out[N,C] = (inp - mean) * rstd * weight + bias; mean[N], rstd[N] are written for backward.
void layernorm_forward_cpu(float* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int N, int C);

// Accumulates dinp[N,C], dweight[C], dbias[C] given dout[N,C] and the saved mean/rstd.
void layernorm_backward_cpu(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const float* weight, const float* mean,
                            const float* rstd, int N, int C);

}  // namespace tt::kernels
