// CPU reference for LayerNorm: rows in parallel for forward and the input gradient (each row's
// statistics are a vectorised reduction within one thread); parameter gradients reduced over
// column chunks in row order (see column_chunks.h) so they are independent of the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/common/column_chunks.h"
#include "kernels/layernorm/layernorm.h"

namespace tt::kernels {

void layernorm_forward_cpu(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                           const float* bias, int N, int C, float eps) {
  const float inv_c = 1.0f / static_cast<float>(C);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<int64_t>(n) * C;
    float* o = out + static_cast<int64_t>(n) * C;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < C; ++i) sum += x[i];
    const float m = sum * inv_c;
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (int i = 0; i < C; ++i) {
      const float d = x[i] - m;
      var += d * d;
    }
    const float s = 1.0f / std::sqrt(var * inv_c + eps);
#pragma omp simd
    for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (mean != nullptr) mean[n] = m;
    if (rstd != nullptr) rstd[n] = s;
  }
}

void layernorm_backward_cpu(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, const float* mean, const float* rstd, int N, int C) {
  const float inv_c = 1.0f / static_cast<float>(C);
  if (dinp != nullptr) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<int64_t>(n) * C;
      const float* dy = dout + static_cast<int64_t>(n) * C;
      float* dx = dinp + static_cast<int64_t>(n) * C;
      const float m = mean[n], s = rstd[n];
      float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
      for (int i = 0; i < C; ++i) {
        const float dnorm = dy[i] * weight[i];
        dnorm_sum += dnorm;
        dnorm_norm_sum += dnorm * (x[i] - m) * s;
      }
      const float dnorm_mean = dnorm_sum * inv_c;
      const float dnorm_norm_mean = dnorm_norm_sum * inv_c;
#pragma omp simd
      for (int i = 0; i < C; ++i) {
        const float norm = (x[i] - m) * s;
        dx[i] += (dy[i] * weight[i] - dnorm_mean - norm * dnorm_norm_mean) * s;
      }
    }
  }
  if (dweight == nullptr && dbias == nullptr) return;
  const int chunks = column_chunk_count(C);
#pragma omp parallel for schedule(static)
  for (int c = 0; c < chunks; ++c) {
    const int j0 = c * kColumnChunk;
    const int w = std::min(kColumnChunk, C - j0);
    float acc_w[kColumnChunk] = {};
    float acc_b[kColumnChunk] = {};
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<int64_t>(n) * C + j0;
      const float* dy = dout + static_cast<int64_t>(n) * C + j0;
      const float m = mean[n], s = rstd[n];
#pragma omp simd
      for (int j = 0; j < w; ++j) {
        acc_w[j] += dy[j] * ((x[j] - m) * s);
        acc_b[j] += dy[j];
      }
    }
    if (dweight != nullptr)
      for (int j = 0; j < w; ++j) dweight[j0 + j] += acc_w[j];
    if (dbias != nullptr)
      for (int j = 0; j < w; ++j) dbias[j0 + j] += acc_b[j];
  }
}

}  // namespace tt::kernels
