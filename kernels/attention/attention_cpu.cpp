// CPU reference for causal attention with grouped key/value heads: the direct O(T²·HD) algorithm
// with the softmax probabilities kept in att. Forward parallelises over (b, h, t) query rows;
// backward over (b, kv head) pairs, walking the group's query heads in order and t in order within
// each, because dk and dv of earlier tokens receive contributions from every later query of every
// query head of the group — owning the whole pair keeps the sums race-free and in a fixed order.
// For NKV = NH (a group of one) the arithmetic is exactly the former multi-head code's.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kernels/attention/attention.h"

namespace tt::kernels {
namespace {

void check_shape(const AttentionShape& s) {
  TT_ASSERT(s.B >= 0 && s.T >= 0 && s.NH > 0 && s.NKV > 0 && s.HD > 0 && s.NH % s.NKV == 0,
            "attention: bad shape B=", s.B, " T=", s.T, " NH=", s.NH, " NKV=", s.NKV, " HD=", s.HD,
            " (NKV must divide NH)");
}

}  // namespace

void attention_forward_cpu(float* out, float* att, const float* qkv, const AttentionShape& s) {
  check_shape(s);
  const int B = s.B, T = s.T, NH = s.NH, hs = s.HD, group = s.NH / s.NKV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t row_dim = s.qkv_dim(), q_dim = s.q_dim();
  const int64_t k_off = q_dim, v_off = q_dim + static_cast<int64_t>(s.NKV) * hs;
#pragma omp parallel for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const int64_t kv_col = static_cast<int64_t>(h / group) * hs;
        const float* q = qkv + (static_cast<int64_t>(b) * T + t) * row_dim + h * hs;
        float* arow = att + ((static_cast<int64_t>(b) * NH + h) * T + t) * T;
        float maxv = -std::numeric_limits<float>::infinity();
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (static_cast<int64_t>(b) * T + t2) * row_dim + k_off + kv_col;
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

        float* o = out + (static_cast<int64_t>(b) * T + t) * q_dim + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (static_cast<int64_t>(b) * T + t2) * row_dim + v_off + kv_col;
          const float a = arow[t2];
#pragma omp simd
          for (int i = 0; i < hs; ++i) o[i] += a * v[i];
        }
      }
    }
  }
}

void attention_backward_cpu(float* dqkv, const float* dout, const float* qkv, const float* att,
                            const AttentionShape& s) {
  if (dqkv == nullptr) return;
  check_shape(s);
  const int B = s.B, T = s.T, NH = s.NH, NKV = s.NKV, hs = s.HD, group = s.NH / s.NKV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const int64_t row_dim = s.qkv_dim(), q_dim = s.q_dim();
  const int64_t k_off = q_dim, v_off = q_dim + static_cast<int64_t>(NKV) * hs;
#pragma omp parallel
  {
    std::vector<float> datt(T);  // per-thread O(T) scratch
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int kvh = 0; kvh < NKV; ++kvh) {
        const int64_t kv_col = static_cast<int64_t>(kvh) * hs;
        // The group's query heads in head order: dk, dv of this kv head sum over them in that order.
        for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
          for (int t = 0; t < T; ++t) {
            const int64_t row = (static_cast<int64_t>(b) * T + t);
            const float* arow = att + ((static_cast<int64_t>(b) * NH + h) * T + t) * T;
            const float* dy = dout + row * q_dim + h * hs;
            const float* q = qkv + row * row_dim + h * hs;
            float* dq = dqkv + row * row_dim + h * hs;
            // out = Σ att·v  ->  datt = dy·v, dv += att·dy
            float weighted = 0.0f;  // Σ att·datt, for the softmax backward
            for (int t2 = 0; t2 <= t; ++t2) {
              const int64_t row2 = (static_cast<int64_t>(b) * T + t2) * row_dim;
              const float* v = qkv + row2 + v_off + kv_col;
              float* dv = dqkv + row2 + v_off + kv_col;
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
              const int64_t row2 = (static_cast<int64_t>(b) * T + t2) * row_dim;
              const float* k = qkv + row2 + k_off + kv_col;
              float* dk = dqkv + row2 + k_off + kv_col;
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
}

}  // namespace tt::kernels
