// Tests for kernels/rope: inverse frequencies (plain and Llama 3.1 scaling) against the formulas
// evaluated in double, the cos/sin tables, the rotation against Hugging Face's rotate_half form in
// double for multi-head, GQA and multi-query shapes (v untouched, position 0 unchanged), backward as
// the transpose (finite differences) and inverse (forward then backward is the identity),
// determinism across thread counts.
#include "kernels/rope/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::AttentionShape;
using kernels::rope_backward_cpu;
using kernels::rope_forward_cpu;
using kernels::rope_inv_freq;
using kernels::rope_tables;
using kernels::RopeSettings;

constexpr double kPi = 3.14159265358979323846;

AttentionShape make_shape(int B, int T, int NH, int NKV, int HD) {
  AttentionShape s;
  s.B = B, s.T = T, s.NH = NH, s.NKV = NKV, s.HD = HD;
  return s;
}

struct Tables {
  std::vector<float> cos, sin;
};
Tables make_tables(int T, const std::vector<float>& inv_freq) {
  Tables t{std::vector<float>(T * inv_freq.size()), std::vector<float>(T * inv_freq.size())};
  rope_tables(t.cos.data(), t.sin.data(), T, inv_freq);
  return t;
}

// θ_i = theta^(−2i/HD), then Llama 3.1's rule, all in double.
std::vector<double> inv_freq_ref(int HD, const RopeSettings& s) {
  std::vector<double> inv(HD / 2);
  for (int i = 0; i < HD / 2; ++i) inv[i] = 1.0 / std::pow(static_cast<double>(s.theta), 2.0 * i / HD);
  if (s.scaling_factor <= 1.0f) return inv;
  const double old_ctx = s.original_max_seq_len, low = s.low_freq_factor, high = s.high_freq_factor;
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  for (double& f : inv) {
    const double wavelen = 2.0 * kPi / f;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      f /= s.scaling_factor;
      continue;
    }
    const double smooth = (old_ctx / wavelen - low) / (high - low);
    f = (1.0 - smooth) * f / s.scaling_factor + smooth * f;
  }
  return inv;
}

TEST(Rope, InvFreqPlainMatchesFormula) {
  for (float theta : {10000.0f, 500000.0f}) {
    RopeSettings s;
    s.theta = theta;
    for (int HD : {2, 8, 64, 128}) {
      const auto got = rope_inv_freq(HD, s);
      const auto want = inv_freq_ref(HD, s);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(got[0], 1.0f);
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 3e-7 * want[i]) << "theta=" << theta << " HD=" << HD << " i=" << i;
    }
  }
}

TEST(Rope, InvFreqLlama3ScalingMatchesFormula) {
  // Llama 3.1 8B (factor 8) and Llama 3.2 1B (factor 32): theta 500000, HD 128, 8192 original context.
  for (float factor : {8.0f, 32.0f}) {
    RopeSettings s;
    s.theta = 500000.0f;
    s.scaling_factor = factor;
    s.low_freq_factor = 1.0f;
    s.high_freq_factor = 4.0f;
    s.original_max_seq_len = 8192;
    const int HD = 128;
    const auto got = rope_inv_freq(HD, s);
    const auto want = inv_freq_ref(HD, s);
    RopeSettings plain = s;
    plain.scaling_factor = 0.0f;
    const auto unscaled = rope_inv_freq(HD, plain);
    int high_band = 0, low_band = 0, medium_band = 0;
    for (int i = 0; i < HD / 2; ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]) << "factor=" << factor << " i=" << i;
      const double wavelen = 2.0 * kPi / unscaled[i];
      if (wavelen < 8192.0 / 4.0) {
        EXPECT_EQ(got[i], unscaled[i]) << i;  // high frequencies untouched
        ++high_band;
      } else if (wavelen > 8192.0) {
        EXPECT_EQ(got[i], unscaled[i] / factor) << i;  // low frequencies divided by the factor
        ++low_band;
      } else {
        EXPECT_LT(got[i], unscaled[i]) << i;  // interpolated in between
        EXPECT_GT(got[i], unscaled[i] / factor) << i;
        ++medium_band;
      }
    }
    // All three bands are exercised by this configuration.
    EXPECT_GT(high_band, 0);
    EXPECT_GT(low_band, 0);
    EXPECT_GT(medium_band, 0);
  }
  // No scaling at factor <= 1.
  RopeSettings one;
  one.scaling_factor = 1.0f;
  RopeSettings none;
  EXPECT_EQ(rope_inv_freq(64, one), rope_inv_freq(64, none));
}

// Reference values from Hugging Face transformers 5.24.0 with torch 2.15.0 on the CPU, printed with
// Python's float.hex(): LlamaRotaryEmbedding.compute_default_rope_parameters of a LlamaConfig with
// head_dim 64, rope_theta 10000 (kHfPlain); ROPE_INIT_FUNCTIONS["llama3"] of a LlamaConfig with
// head_dim 128, rope_parameters {rope_type "llama3", rope_theta 500000, factor 8, low_freq_factor 1,
// high_freq_factor 4, original_max_position_embeddings 8192} (kHfLlama3, attention factor 1.0); and
// LlamaRotaryEmbedding(that config) at positions 1, 4095, 131071, columns 0, 31, 63 (kHfCos, kHfSin).
const float kHfPlain[32] = {0x1p+0f,         0x1.7ff222p-1f,  0x1.1feb34p-1f,  0x1.afd136p-2f,  0x1.43d136p-2f,
                            0x1.e5a846p-3f,  0x1.6c310ep-3f,  0x1.111aeep-3f,  0x1.99999ap-4f,  0x1.33281ap-4f,
                            0x1.ccab84p-5f,  0x1.59742ap-5f,  0x1.030dc6p-5f,  0x1.84869ep-6f,  0x1.235a72p-6f,
                            0x1.b4f7e4p-7f,  0x1.47ae14p-7f,  0x1.eb736p-8f,   0x1.708938p-8f,  0x1.145ceep-8f,
                            0x1.9e7c7p-9f,   0x1.36d21ap-9f,  0x1.d22a5p-10f,  0x1.5d931cp-10f, 0x1.0624dep-10f,
                            0x1.892918p-11f, 0x1.26d42cp-11f, 0x1.ba2e4ap-12f, 0x1.4b96cp-12f,  0x1.f1502ap-13f,
                            0x1.74eea6p-13f, 0x1.17a8e4p-13f};
const float kHfLlama3[64] = {
    0x1p+0f,         0x1.a11582p-1f,  0x1.53c38cp-1f,  0x1.14c708p-1f,  0x1.c2ef78p-2f,  0x1.6f56fap-2f,
    0x1.2b3dc6p-2f,  0x1.e788c2p-3f,  0x1.8d276p-3f,   0x1.43874p-3f,   0x1.078d4p-3f,   0x1.ad6338p-4f,
    0x1.5dc95ap-4f,  0x1.1cf13p-4f,   0x1.d03ccep-5f,  0x1.7a2d08p-5f,  0x1.34119p-5f,   0x1.f5ea7ep-6f,
    0x1.98de92p-6f,  0x1.4d1272p-6f,  0x1.0f5386p-6f,  0x1.ba0dd8p-7f,  0x1.681adap-7f,  0x1.2558fep-7f,
    0x1.ddee9ep-8f,  0x1.8554ecp-8f,  0x1.3d2804p-8f,  0x1.025c6ap-8f,  0x1.a4ee4p-9f,   0x1.1bfa0cp-9f,
    0x1.67a23ap-10f, 0x1.c12f3cp-11f, 0x1.132ba4p-11f, 0x1.47e21p-12f,  0x1.765ba4p-13f, 0x1.90d10cp-14f,
    0x1.46831ap-14f, 0x1.09fb7ep-14f, 0x1.b15902p-15f, 0x1.610332p-15f, 0x1.1f91fp-15f,  0x1.d484dep-16f,
    0x1.7da9e8p-16f, 0x1.36e8eap-16f, 0x1.fa8b86p-17f, 0x1.9ca3eap-17f, 0x1.5024d6p-17f, 0x1.11d41ep-17f,
    0x1.be2188p-18f, 0x1.6b6d0ep-18f, 0x1.280d96p-18f, 0x1.e257p-19f,   0x1.88ec2p-19f,  0x1.4014d2p-19f,
    0x1.04be68p-19f, 0x1.a8d01p-20f,  0x1.5a0f4ep-20f, 0x1.19e8p-20f,   0x1.cb4a9ap-21f, 0x1.76258ep-21f,
    0x1.30c94ep-21f, 0x1.f09184p-22f, 0x1.94836p-22f,  0x1.4985fep-22f};
const int kHfPositions[3] = {1, 4095, 131071};
const int kHfColumns[3] = {0, 31, 63};
const float kHfCos[9] = {0x1.14a282p-1f, 0x1.fffff4p-1f,  0x1p+0f,        -0x1.0e3cd8p-4f, -0x1.ddf0d6p-1f,
                         0x1.ffffe6p-1f, -0x1.a2cebcp-1f, 0x1.63f49ap-1f, 0x1.ff95fap-1f};
const float kHfSin[9] = {0x1.aed548p-1f, 0x1.c12f38p-11f, 0x1.4985fep-22f, -0x1.fee26cp-1f, -0x1.6f3de2p-2f,
                         0x1.49716p-10f, -0x1.268614p-1f, -0x1.700576p-1f, 0x1.496e9ap-5f};

TEST(Rope, MatchesTransformers) {
  RopeSettings plain;
  const auto inv = rope_inv_freq(64, plain);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(inv[i], kHfPlain[i]) << "plain i=" << i;  // bit for bit
  RopeSettings s;
  s.theta = 500000.0f;
  s.scaling_factor = 8.0f;
  const auto inv3 = rope_inv_freq(128, s);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(inv3[i], kHfLlama3[i]) << "llama3 i=" << i;
  // PyTorch's vectorised cos/sin and the C library's may differ in the last bit.
  const auto tab = make_tables(kHfPositions[2] + 1, inv3);
  for (int p = 0; p < 3; ++p)
    for (int k = 0; k < 3; ++k) {
      const size_t at = static_cast<size_t>(kHfPositions[p]) * 64 + kHfColumns[k];
      const float want_cos = kHfCos[p * 3 + k], want_sin = kHfSin[p * 3 + k];
      EXPECT_LE(std::fabs(tab.cos[at] - want_cos), std::fabs(std::nextafter(want_cos, 2.0f) - want_cos))
          << "cos p=" << kHfPositions[p] << " i=" << kHfColumns[k];
      EXPECT_LE(std::fabs(tab.sin[at] - want_sin), std::fabs(std::nextafter(want_sin, 2.0f) - want_sin))
          << "sin p=" << kHfPositions[p] << " i=" << kHfColumns[k];
    }
}

TEST(Rope, TablesAreCosSinOfFp32Angles) {
  RopeSettings s;
  const auto inv = rope_inv_freq(16, s);
  const int T = 50;
  const auto t = make_tables(T, inv);
  for (int p = 0; p < T; ++p)
    for (size_t i = 0; i < inv.size(); ++i) {
      const double a = static_cast<float>(p) * inv[i];  // the fp32 product, as Hugging Face forms it
      EXPECT_NEAR(t.cos[p * inv.size() + i], std::cos(a), 2e-7) << p << "," << i;
      EXPECT_NEAR(t.sin[p * inv.size() + i], std::sin(a), 2e-7) << p << "," << i;
    }
  for (size_t i = 0; i < inv.size(); ++i) {
    EXPECT_EQ(t.cos[i], 1.0f);
    EXPECT_EQ(t.sin[i], 0.0f);
  }
}

// Hugging Face's apply_rotary_pos_emb in double: x·cos(emb) + rotate_half(x)·sin(emb), emb = [θ, θ].
std::vector<double> rotate_ref(const std::vector<float>& qkv, const Tables& tab, const AttentionShape& s) {
  std::vector<double> out(qkv.begin(), qkv.end());
  const int half = s.HD / 2;
  for (int b = 0; b < s.B; ++b)
    for (int t = 0; t < s.T; ++t)
      for (int h = 0; h < s.NH + s.NKV; ++h) {
        const size_t base = (static_cast<size_t>(b) * s.T + t) * s.qkv_dim() + static_cast<size_t>(h) * s.HD;
        for (int d = 0; d < s.HD; ++d) {
          const int i = d % half;
          const double c = tab.cos[t * half + i], sn = tab.sin[t * half + i];
          const double rot = d < half ? -static_cast<double>(qkv[base + d + half]) : qkv[base + d - half];
          out[base + d] = qkv[base + d] * c + rot * sn;
        }
      }
  return out;
}

const AttentionShape kShapes[] = {
    make_shape(2, 5, 4, 4, 8),   // multi-head
    make_shape(2, 5, 4, 2, 8),   // GQA
    make_shape(1, 7, 4, 1, 16),  // multi-query
    make_shape(3, 3, 2, 1, 2),   // one pair per head
};

TEST(Rope, ForwardMatchesRotateHalfReference) {
  RopeSettings settings;
  for (const auto& s : kShapes) {
    const auto tab = make_tables(s.T, rope_inv_freq(s.HD, settings));
    const auto qkv = random_floats(static_cast<size_t>(s.B) * s.T * s.qkv_dim(), 1, -2.f, 2.f);
    auto x = qkv;
    rope_forward_cpu(x.data(), tab.cos.data(), tab.sin.data(), s);
    const auto want = rotate_ref(qkv, tab, s);
    const std::string what = "NH=" + std::to_string(s.NH) + " NKV=" + std::to_string(s.NKV);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], want[i], 1e-6) << what << " i=" << i;
    for (int b = 0; b < s.B; ++b)
      for (int t = 0; t < s.T; ++t) {
        const size_t row = (static_cast<size_t>(b) * s.T + t) * s.qkv_dim();
        const size_t v0 = row + static_cast<size_t>(s.NH + s.NKV) * s.HD;
        // v untouched, bit for bit.
        EXPECT_EQ(std::memcmp(&x[v0], &qkv[v0], sizeof(float) * s.NKV * s.HD), 0) << what << " b=" << b << " t=" << t;
        // Position 0: rotation by angle 0.
        if (t == 0) EXPECT_EQ(std::memcmp(&x[row], &qkv[row], sizeof(float) * s.qkv_dim()), 0) << what << " b=" << b;
      }
    // Rotations preserve the norm of every (x_i, x_{i+HD/2}) pair, q and k alike.
    const int half = s.HD / 2;
    for (size_t r = 0; r < static_cast<size_t>(s.B) * s.T; ++r)
      for (int h = 0; h < s.NH + s.NKV; ++h)
        for (int i = 0; i < half; ++i) {
          const size_t k = r * s.qkv_dim() + static_cast<size_t>(h) * s.HD + i;
          EXPECT_NEAR(std::hypot(x[k], x[k + half]), std::hypot(qkv[k], qkv[k + half]), 1e-6) << what;
        }
  }
}

TEST(Rope, ForwardThenBackwardIsIdentity) {
  RopeSettings settings;
  settings.theta = 500000.0f;
  settings.scaling_factor = 8.0f;
  for (const auto& s : kShapes) {
    const auto tab = make_tables(s.T, rope_inv_freq(s.HD, settings));
    const auto qkv = random_floats(static_cast<size_t>(s.B) * s.T * s.qkv_dim(), 2, -3.f, 3.f);
    auto x = qkv;
    rope_forward_cpu(x.data(), tab.cos.data(), tab.sin.data(), s);
    rope_backward_cpu(x.data(), tab.cos.data(), tab.sin.data(), s);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], qkv[i], 1e-6) << i;
  }
}

TEST(Rope, BackwardIsTheTransposeByFiniteDifferences) {
  RopeSettings settings;
  for (const auto& s : kShapes) {
    const auto tab = make_tables(s.T, rope_inv_freq(s.HD, settings));
    const size_t n = static_cast<size_t>(s.B) * s.T * s.qkv_dim();
    auto qkv = random_floats(n, 3);
    const auto R = random_floats(n, 4);
    std::vector<float> x(n);
    auto loss = [&] {
      x = qkv;
      rope_forward_cpu(x.data(), tab.cos.data(), tab.sin.data(), s);
      return weighted_sum(x.data(), R.data(), n);
    };
    auto grad = R;  // dL/d(rotated qkv) = R
    rope_backward_cpu(grad.data(), tab.cos.data(), tab.sin.data(), s);
    EXPECT_TRUE(gradients_match(check_gradient(qkv, grad, loss, 400)));
  }
}

TEST(Rope, BitIdenticalAcrossThreadCounts) {
  const auto s = make_shape(3, 37, 8, 2, 64);
  const auto tab = make_tables(s.T, rope_inv_freq(s.HD, RopeSettings{}));
  const auto qkv = random_floats(static_cast<size_t>(s.B) * s.T * s.qkv_dim(), 5);
  std::vector<float> results[2][2];
  for (int run = 0; run < 2; ++run) {
    with_threads(run + 1, [&] {
      auto x = qkv;
      rope_forward_cpu(x.data(), tab.cos.data(), tab.sin.data(), s);
      results[run][0] = x;
      rope_backward_cpu(x.data(), tab.cos.data(), tab.sin.data(), s);
      results[run][1] = x;
    });
  }
  for (int k = 0; k < 2; ++k) EXPECT_TRUE(bit_identical(results[0][k], results[1][k])) << k;
}

}  // namespace
}  // namespace tt::test
