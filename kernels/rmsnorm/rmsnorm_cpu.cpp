// CPU reference for RMSNorm: rows in parallel for forward and the input gradient (each row's mean
// square is a vectorised reduction within one thread); the weight gradient reduced over column chunks
// in row order (see column_chunks.h) so it is independent of the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/common/column_chunks.h"
#include "kernels/rmsnorm/rmsnorm.h"

namespace tt::kernels {

void rmsnorm_forward_cpu(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<int64_t>(n) * C;
    float* o = out + static_cast<int64_t>(n) * C;
    float sum_sq = 0.0f;
#pragma omp simd reduction(+ : sum_sq)
    for (int i = 0; i < C; ++i) sum_sq += x[i] * x[i];
    const float s = 1.0f / std::sqrt(sum_sq / static_cast<float>(C) + eps);
#pragma omp simd
    for (int i = 0; i < C; ++i) o[i] = (x[i] * s) * weight[i];
    if (rstd != nullptr) rstd[n] = s;
  }
}

void rmsnorm_backward_cpu(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                          const float* rstd, int N, int C) {
  if (dinp != nullptr) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<int64_t>(n) * C;
      const float* dy = dout + static_cast<int64_t>(n) * C;
      float* dx = dinp + static_cast<int64_t>(n) * C;
      const float s = rstd[n];
      float dnorm_norm_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_norm_sum)
      for (int i = 0; i < C; ++i) dnorm_norm_sum += dy[i] * weight[i] * (x[i] * s);
      const float dnorm_norm_mean = dnorm_norm_sum / static_cast<float>(C);
#pragma omp simd
      for (int i = 0; i < C; ++i) dx[i] += (dy[i] * weight[i] - (x[i] * s) * dnorm_norm_mean) * s;
    }
  }
  if (dweight == nullptr) return;
  const int chunks = column_chunk_count(C);
#pragma omp parallel for schedule(static)
  for (int c = 0; c < chunks; ++c) {
    const int j0 = c * kColumnChunk;
    const int w = std::min(kColumnChunk, C - j0);
    float acc[kColumnChunk] = {};
    for (int n = 0; n < N; ++n) {
      const float* x = inp + static_cast<int64_t>(n) * C + j0;
      const float* dy = dout + static_cast<int64_t>(n) * C + j0;
      const float s = rstd[n];
#pragma omp simd
      for (int j = 0; j < w; ++j) acc[j] += dy[j] * (x[j] * s);
    }
    for (int j = 0; j < w; ++j) dweight[j0 + j] += acc[j];
  }
}

}  // namespace tt::kernels
