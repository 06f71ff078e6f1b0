// CPU reference for causal multi-head attention: the direct O(T²·hs) algorithm with the softmax
// probabilities kept in att. Forward parallelises over (b, h, t) query rows; backward over (b, h)
// pairs, walking t in order, because dk and dv of earlier tokens receive contributions from every
// later query — owning the whole pair keeps the sums race-free and in a fixed order.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kernels/attention/attention.h"

namespace tt::kernels {

void attention_forward_cpu(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  TT_ASSERT(NH > 0 && C % NH == 0, "attention: C=", C, " not divisible by NH=", NH);
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t c3 = 3 * static_cast<int64_t>(C);
#pragma omp parallel for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (static_cast<int64_t>(b) * T + t) * c3 + h * hs;
        float* arow = att + ((static_cast<int64_t>(b) * NH + h) * T + t) * T;
        float maxv = -std::numeric_limits<float>::infinity();
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (static_cast<int64_t>(b) * T + t2) * c3 + C + h * hs;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
          dot *= scale;
          arow[t2] = dot;
          maxv = dot > maxv ? dot : maxv;
        }
        float sum = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float e = std::exp(arow[t2] - maxv);
          arow[t2] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        for (int t2 = 0; t2 <= t; ++t2) arow[t2] *= inv;
        for (int t2 = t + 1; t2 < T; ++t2) arow[t2] = 0.0f;

        float* o = out + (static_cast<int64_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (static_cast<int64_t>(b) * T + t2) * c3 + 2 * C + h * hs;
          const float a = arow[t2];
#pragma omp simd
          for (int i = 0; i < hs; ++i) o[i] += a * v[i];
        }
      }
    }
  }
}

void attention_backward_cpu(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                            int NH) {
  if (dqkv == nullptr) return;
  TT_ASSERT(NH > 0 && C % NH == 0, "attention: C=", C, " not divisible by NH=", NH);
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t c3 = 3 * static_cast<int64_t>(C);
#pragma omp parallel
  {
    std::vector<float> datt(T);  // per-thread O(T) scratch
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        for (int t = 0; t < T; ++t) {
          const int64_t row = (static_cast<int64_t>(b) * T + t);
          const float* arow = att + ((static_cast<int64_t>(b) * NH + h) * T + t) * T;
          const float* dy = dout + row * C + h * hs;
          const float* q = qkv + row * c3 + h * hs;
          float* dq = dqkv + row * c3 + h * hs;
          // out = Σ att·v  ->  datt = dy·v, dv += att·dy
          float weighted = 0.0f;  // Σ att·datt, for the softmax backward
          for (int t2 = 0; t2 <= t; ++t2) {
            const int64_t row2 = (static_cast<int64_t>(b) * T + t2) * c3;
            const float* v = qkv + row2 + 2 * C + h * hs;
            float* dv = dqkv + row2 + 2 * C + h * hs;
            const float a = arow[t2];
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int i = 0; i < hs; ++i) {
              dot += dy[i] * v[i];
              dv[i] += a * dy[i];
            }
            datt[t2] = dot;
            weighted += a * dot;
          }
          // softmax backward, then the scaled q·k product
          for (int t2 = 0; t2 <= t; ++t2) {
            const int64_t row2 = (static_cast<int64_t>(b) * T + t2) * c3;
            const float* k = qkv + row2 + C + h * hs;
            float* dk = dqkv + row2 + C + h * hs;
            const float dpre = arow[t2] * (datt[t2] - weighted) * scale;
#pragma omp simd
            for (int i = 0; i < hs; ++i) {
              dq[i] += dpre * k[i];
              dk[i] += dpre * q[i];
            }
          }
        }
      }
    }
  }
}

}  // namespace tt::kernels
