// Rotary position embedding (RoPE) in the rotate_half convention of Hugging Face's Llama: for a head
// vector x of size HD at position p and i < HD/2, the pair (x_i, x_{i+HD/2}) is rotated by the angle
// p·θ_i:  x'_i = x_i cos − x_{i+HD/2} sin,  x'_{i+HD/2} = x_{i+HD/2} cos + x_i sin.
// The frequencies θ_i = theta^(−2i/HD), optionally rescaled as Llama 3.1 does (rope_inv_freq), are
// turned once into fp32 cos/sin tables [max_T, HD/2] (rope_tables) that both devices read.
// Design: applied IN PLACE to the q and k heads of the fused qkv activation (attention.h layout;
// v is untouched), right after the qkv projection, so attention sees rotated q/k and nothing else is
// stored. Backward is the inverse rotation (the transpose), applied in place to dqkv: it turns the
// gradient w.r.t. rotated q/k into the gradient w.r.t. the projection's output. Positions are
// 0 … T−1 in every sequence. Elementwise per pair: bit-identical for any thread count.
#pragma once

#include <vector>

#include "kernels/attention/attention.h"

namespace tt::kernels {

struct RopeSettings {
  float theta = 10000.0f;
  // Llama 3.1 frequency scaling (Hugging Face rope_type "llama3"); factor <= 1 means none.
  float scaling_factor = 0.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_max_seq_len = 8192;
};

// θ_i for i < HD/2, in fp32 as Hugging Face computes them (then rescaled when scaling_factor > 1).
std::vector<float> rope_inv_freq(int HD, const RopeSettings& s);
// cos[t, i] = cos(t · θ_i), sin likewise, t < T (fp32 product t·θ_i, as Hugging Face): [T, HD/2] each.
void rope_tables(float* cos, float* sin, int T, const std::vector<float>& inv_freq);

// Rotates the q and k heads of qkv[B, T, (NH + 2·NKV)·HD] in place (positions 0 … T−1).
void rope_forward_cpu(float* qkv, const float* cos, const float* sin, const AttentionShape& s);
// The inverse rotation of the q and k parts of dqkv, in place.
void rope_backward_cpu(float* dqkv, const float* cos, const float* sin, const AttentionShape& s);

}  // namespace tt::kernels

// ---- CUDA (rope.cu) ----------------------------------------------------------------------------
// Same contracts on device pointers (cos/sin tables fp32 on the device); qkv is float or
// __nv_bfloat16 (fp32 math, one rounding per element). Asynchronous on `stream`.
#if TOPOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tt::kernels {

void rope_forward_cuda(float* qkv, const float* cos, const float* sin, const AttentionShape& s,
                       cudaStream_t stream = 0);
void rope_forward_cuda(__nv_bfloat16* qkv, const float* cos, const float* sin, const AttentionShape& s,
                       cudaStream_t stream = 0);
void rope_backward_cuda(float* dqkv, const float* cos, const float* sin, const AttentionShape& s,
                        cudaStream_t stream = 0);
void rope_backward_cuda(__nv_bfloat16* dqkv, const float* cos, const float* sin, const AttentionShape& s,
                        cudaStream_t stream = 0);

}  // namespace tt::kernels
#endif  // TOPOTRAIN_HAVE_CUDA
