// Shared by the attention GPU suites (attention_gpu_test.cpp: the flash kernel;
// attention_cudnn_gpu_test.cpp: cuDNN SDPA): shape construction and labels, the logsumexp
// reference, a scoped override of the attention backend (kernels/attention/attention.h), and one
// case's inputs, CPU reference and device buffers. Shapes are kernels::AttentionShape (grouped
// key/value heads: NKV = NH is multi-head, NKV < NH grouped-query, NKV = 1 multi-query).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "tests/gpu_test_util.h"
#include "tests/kernels/grad_check.h"

namespace tt::test {

using kernels::AttentionShape;

inline AttentionShape attention_shape(int B, int T, int NH, int NKV, int HD) {
  AttentionShape s;
  s.B = B, s.T = T, s.NH = NH, s.NKV = NKV, s.HD = HD;
  return s;
}

inline std::string shape_label(const AttentionShape& s) {
  return str("B=", s.B, " T=", s.T, " NH=", s.NH, " NKV=", s.NKV, " HD=", s.HD);
}

// lse[b,h,t] = log Σ_{t2<=t} exp(scale q·k) in double, from qkv[B,T,(NH+2·NKV)·HD]; query head h
// reads key head h / (NH/NKV).
inline std::vector<float> reference_lse(const std::vector<float>& qkv, const AttentionShape& s) {
  const size_t D = s.qkv_dim();
  const int group = s.NH / s.NKV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.HD));
  std::vector<float> lse(size_t(s.B) * s.NH * s.T);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.NH; ++h)
      for (int t = 0; t < s.T; ++t) {
        const size_t q_col = size_t(h) * s.HD, k_col = size_t(s.NH + h / group) * s.HD;
        std::vector<double> sc(t + 1);
        double mx = -1e300;
        for (int t2 = 0; t2 <= t; ++t2) {
          double d = 0;
          for (int i = 0; i < s.HD; ++i)
            d += double(qkv[(size_t(b) * s.T + t) * D + q_col + i]) * qkv[(size_t(b) * s.T + t2) * D + k_col + i];
          sc[t2] = d * scale;
          mx = std::max(mx, sc[t2]);
        }
        double sum = 0;
        for (double x : sc) sum += std::exp(x - mx);
        lse[(size_t(b) * s.NH + h) * s.T + t] = static_cast<float>(mx + std::log(sum));
      }
  return lse;
}

// One forward/backward case: storage-rounded random qkv (seed 1), the CPU forward's out and att,
// dout (seed 2), dqkv0 (seed 3) and dqkv = dqkv0 + the CPU backward; on the device qkv and dout
// uploaded, out and lse poisoned.
template <typename T>
struct AttentionCase {
  explicit AttentionCase(const AttentionShape& shape)
      : s(shape),
        C(s.q_dim()),
        n_qkv(size_t(s.B) * s.T * s.qkv_dim()),
        n_out(size_t(s.B) * s.T * C),
        n_lse(size_t(s.B) * s.NH * s.T),
        qkv(storage_round<T>(random_floats(n_qkv, 1, -1.5f, 1.5f))),
        out(n_out),
        att(size_t(s.B) * s.NH * s.T * s.T),
        d_qkv(upload<T>(qkv)),
        d_out(n_out),
        d_lse(n_lse) {
    kernels::attention_forward_cpu(out.data(), att.data(), qkv.data(), s);
    d_out.poison(), d_lse.poison();
    dout = storage_round<T>(random_floats(n_out, 2));
    dqkv0 = storage_round<T>(random_floats(n_qkv, 3));
    dqkv = dqkv0;
    kernels::attention_backward_cpu(dqkv.data(), dout.data(), qkv.data(), att.data(), s);
    d_dout = upload<T>(dout);
  }

  AttentionShape s;
  int C;  // out row width, NH·HD
  size_t n_qkv, n_out, n_lse;
  std::vector<float> qkv, out, att, dout, dqkv0, dqkv;
  DeviceBuffer<T> d_qkv, d_out;
  DeviceBuffer<float> d_lse;
  DeviceBuffer<T> d_dout;
};

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
