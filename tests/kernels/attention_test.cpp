// Tests for kernels/attention: forward against a naive double implementation, causal masking
// (future tokens cannot change earlier outputs, att is 0 above the diagonal), backward by finite
// differences over every qkv element (+= semantics), determinism across thread counts.
#include "kernels/attention/attention.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::attention_backward_cpu;
using kernels::attention_forward_cpu;

constexpr int B = 2, T = 5, C = 6, NH = 2, HS = C / NH;

std::vector<double> naive_attention(const std::vector<float>& qkv) {
  std::vector<double> out(B * T * C, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  auto at = [&](int b, int t, int part, int h, int i) {
    return static_cast<double>(qkv[(b * T + t) * 3 * C + part * C + h * HS + i]);
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> s(t + 1);
        double mx = -1e300, sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          double d = 0;
          for (int i = 0; i < HS; ++i) d += at(b, t, 0, h, i) * at(b, t2, 1, h, i);
          s[t2] = d * scale;
          mx = std::max(mx, s[t2]);
        }
        for (auto& x : s) sum += (x = std::exp(x - mx));
        for (int t2 = 0; t2 <= t; ++t2)
          for (int i = 0; i < HS; ++i) out[(b * T + t) * C + h * HS + i] += s[t2] / sum * at(b, t2, 2, h, i);
      }
  return out;
}

TEST(Attention, ForwardMatchesNaiveAndIsCausal) {
  auto qkv = random_floats(B * T * 3 * C, 1, -2.f, 2.f);
  std::vector<float> out(B * T * C), att(B * NH * T * T, 7.0f);
  attention_forward_cpu(out.data(), att.data(), qkv.data(), B, T, C, NH);
  const auto ref = naive_attention(qkv);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], ref[i], 1e-5) << i;
  for (int bh = 0; bh < B * NH; ++bh)
    for (int t = 0; t < T; ++t) {
      double row = 0;
      for (int t2 = 0; t2 < T; ++t2) {
        const float a = att[(bh * T + t) * T + t2];
        if (t2 > t)
          EXPECT_EQ(a, 0.0f) << "above the diagonal";
        else
          EXPECT_GT(a, 0.0f);
        row += a;
      }
      EXPECT_NEAR(row, 1.0, 1e-5);
    }

  // Changing token 3 (its q, k and v) must leave every output before it bit-identical.
  const int changed = 3;
  auto qkv2 = qkv;
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < 3 * C; ++j) qkv2[(b * T + changed) * 3 * C + j] += 0.75f;
  std::vector<float> out2(out.size()), att2(att.size());
  attention_forward_cpu(out2.data(), att2.data(), qkv2.data(), B, T, C, NH);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) {
        const size_t i = (b * T + t) * C + c;
        if (t < changed)
          EXPECT_EQ(out[i], out2[i]) << "b=" << b << " t=" << t;
        else
          EXPECT_NE(out[i], out2[i]) << "b=" << b << " t=" << t;
      }
}

TEST(Attention, BackwardFiniteDifferencesAndAccumulates) {
  auto qkv = random_floats(B * T * 3 * C, 1);
  const auto R = random_floats(B * T * C, 2);
  std::vector<float> out(B * T * C), att(B * NH * T * T);
  auto loss = [&] {
    attention_forward_cpu(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  loss();
  const auto d0 = random_floats(qkv.size(), 3);
  auto dqkv = d0;
  attention_backward_cpu(dqkv.data(), R.data(), qkv.data(), att.data(), B, T, C, NH);
  EXPECT_TRUE(gradients_match(check_gradient(qkv, minus(dqkv, d0), loss, /*max_checks=*/1000)));
  attention_backward_cpu(nullptr, R.data(), qkv.data(), att.data(), B, T, C, NH);
}

TEST(Attention, BitIdenticalAcrossThreadCounts) {
  const int b = 2, t = 33, c = 48, nh = 4;
  const auto qkv = random_floats(b * t * 3 * c, 1), dout = random_floats(b * t * c, 2);
  std::vector<float> outs[2], dqkvs[2];
  for (int run = 0; run < 2; ++run)
    with_threads(run + 1, [&] {
      std::vector<float> out(b * t * c), att(b * nh * t * t), dqkv(qkv.size(), 0.5f);
      attention_forward_cpu(out.data(), att.data(), qkv.data(), b, t, c, nh);
      attention_backward_cpu(dqkv.data(), dout.data(), qkv.data(), att.data(), b, t, c, nh);
      outs[run] = out;
      dqkvs[run] = dqkv;
    });
  EXPECT_TRUE(bit_identical(outs[0], outs[1]));
  EXPECT_TRUE(bit_identical(dqkvs[0], dqkvs[1]));
}

}  // namespace
}  // namespace tt::test
