// Shared by the attention GPU suites (attention_gpu_test.cpp: the flash kernel;
// attention_cudnn_gpu_test.cpp: cuDNN SDPA): test shapes, the logsumexp reference, and a scoped
// override of the attention backend (kernels/attention/attention.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention/attention.h"

namespace tt::test {

struct AttentionShape {
  int B, T, NH, HS;
};

// lse[b,h,t] = log Σ_{t2<=t} exp(scale q·k) in double, from qkv[B,T,3C].
inline std::vector<float> reference_lse(const std::vector<float>& qkv, AttentionShape s) {
  const int C = s.NH * s.HS;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.HS));
  std::vector<float> lse(size_t(s.B) * s.NH * s.T);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.NH; ++h)
      for (int t = 0; t < s.T; ++t) {
        std::vector<double> sc(t + 1);
        double mx = -1e300;
        for (int t2 = 0; t2 <= t; ++t2) {
          double d = 0;
          for (int i = 0; i < s.HS; ++i)
            d += double(qkv[(size_t(b) * s.T + t) * 3 * C + h * s.HS + i]) *
                 qkv[(size_t(b) * s.T + t2) * 3 * C + C + h * s.HS + i];
          sc[t2] = d * scale;
          mx = std::max(mx, sc[t2]);
        }
        double sum = 0;
        for (double x : sc) sum += std::exp(x - mx);
        lse[(size_t(b) * s.NH + h) * s.T + t] = static_cast<float>(mx + std::log(sum));
      }
  return lse;
}

// Sets the process-wide attention backend for one scope and restores the previous one.
class ScopedAttentionBackend {
 public:
  explicit ScopedAttentionBackend(kernels::AttentionBackend b) : saved_(kernels::attention_backend()) {
    kernels::set_attention_backend(b);
  }
  ~ScopedAttentionBackend() { kernels::set_attention_backend(saved_); }
  ScopedAttentionBackend(const ScopedAttentionBackend&) = delete;
  ScopedAttentionBackend& operator=(const ScopedAttentionBackend&) = delete;

 private:
  kernels::AttentionBackend saved_;
};

}  // namespace tt::test
