// RoPE frequencies, cos/sin tables and the CPU rotation.
// Design: rope_inv_freq repeats Hugging Face's fp32 evaluation operation by operation (PyTorch's
// `a / tensor` is reciprocal(tensor) · a, Python scalars are rounded to fp32 before the tensor op),
// with every fp32 operation rounded on its own as PyTorch's elementwise ops do: the compiler may not
// fuse a product and a sum into one FMA there, or a few frequencies of the Llama 3.1 medium band come
// out one ulp off. Only the power is taken in double and rounded once. The rotation parallelises over
// (batch, position) rows; every pair is independent, so the result does not depend on the threads.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/rope/rope.h"

namespace tt::kernels {

namespace {

constexpr double kTwoPi = 6.283185307179586;  // 2 · math.pi, as the Python double

// An fp32 product that cannot be fused into a later sum (an FMA rounds once where PyTorch rounds
// twice): the volatile round trip hides the rounded product from the optimiser.
float mul32(float a, float b) {
  volatile float p = a * b;
  return p;
}

// Rotates the q and k heads of every row of x by +angle (sign 1) or −angle (sign −1).
void rotate(float* x, const float* cos, const float* sin, const AttentionShape& s, float sign) {
  const int half = s.HD / 2;
  const int heads = s.NH + s.NKV;
  const int64_t rows = static_cast<int64_t>(s.B) * s.T;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int t = static_cast<int>(row % s.T);
    const float* c = cos + static_cast<int64_t>(t) * half;
    const float* sn = sin + static_cast<int64_t>(t) * half;
    float* r = x + row * s.qkv_dim();
    for (int h = 0; h < heads; ++h) {
      float* v = r + static_cast<int64_t>(h) * s.HD;
#pragma omp simd
      for (int i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half], si = sign * sn[i];
        v[i] = x0 * c[i] - x1 * si;
        v[i + half] = x1 * c[i] + x0 * si;
      }
    }
  }
}

}  // namespace

std::vector<float> rope_inv_freq(int HD, const RopeSettings& s) {
  const int half = HD / 2;
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(HD);
    const float p = static_cast<float>(std::pow(static_cast<double>(s.theta), static_cast<double>(e)));
    inv[i] = 1.0f / p;
  }
  if (!(s.scaling_factor > 1.0f)) return inv;

  const float factor = s.scaling_factor;
  const double old_ctx = s.original_max_seq_len;
  const float low_freq_wavelen = static_cast<float>(old_ctx / s.low_freq_factor);
  const float high_freq_wavelen = static_cast<float>(old_ctx / s.high_freq_factor);
  const float band = static_cast<float>(static_cast<double>(s.high_freq_factor) - s.low_freq_factor);
  for (int i = 0; i < half; ++i) {
    const float wavelen = mul32(1.0f / inv[i], static_cast<float>(kTwoPi));
    float f = wavelen > low_freq_wavelen ? inv[i] / factor : inv[i];
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const float smooth = (mul32(1.0f / wavelen, static_cast<float>(old_ctx)) - s.low_freq_factor) / band;
      f = mul32(1.0f - smooth, f) / factor + mul32(smooth, f);
    }
    inv[i] = f;
  }
  return inv;
}

void rope_tables(float* cos, float* sin, int T, const std::vector<float>& inv_freq) {
  const int half = static_cast<int>(inv_freq.size());
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < half; ++i) {
      const float a = static_cast<float>(t) * inv_freq[i];
      cos[static_cast<int64_t>(t) * half + i] = std::cos(a);
      sin[static_cast<int64_t>(t) * half + i] = std::sin(a);
    }
  }
}

void rope_forward_cpu(float* qkv, const float* cos, const float* sin, const AttentionShape& s) {
  rotate(qkv, cos, sin, s, 1.0f);
}

void rope_backward_cpu(float* dqkv, const float* cos, const float* sin, const AttentionShape& s) {
  rotate(dqkv, cos, sin, s, -1.0f);
}

}  // namespace tt::kernels
