// Tests for kernels/attention over multi-head (NKV = NH), grouped-query (NKV = 2 of NH = 4) and
// multi-query (NKV = 1) shapes: forward against a naive double implementation that repeats the
// key/value heads explicitly, causal masking (future tokens cannot change earlier outputs, att is 0
// above the diagonal), backward by finite differences over every qkv element (+= semantics),
// determinism across thread counts, and GQA equal to MHA on explicitly repeated key/value heads.
#include "kernels/attention/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "tests/kernels/grad_check.h"

namespace tt::test {
namespace {

using kernels::attention_backward_cpu;
using kernels::attention_forward_cpu;
using kernels::AttentionShape;

AttentionShape make_shape(int B, int T, int NH, int NKV, int HD) {
  AttentionShape s;
  s.B = B, s.T = T, s.NH = NH, s.NKV = NKV, s.HD = HD;
  return s;
}

std::string describe(const AttentionShape& s) {
  std::ostringstream os;
  os << "B=" << s.B << " T=" << s.T << " NH=" << s.NH << " NKV=" << s.NKV << " HD=" << s.HD;
  return os.str();
}

size_t qkv_size(const AttentionShape& s) { return static_cast<size_t>(s.B) * s.T * s.qkv_dim(); }
size_t out_size(const AttentionShape& s) { return static_cast<size_t>(s.B) * s.T * s.q_dim(); }
size_t att_size(const AttentionShape& s) { return static_cast<size_t>(s.B) * s.NH * s.T * s.T; }

// Small shapes for the exhaustive checks: MHA, GQA (2 query heads per kv head), MQA.
const AttentionShape kSmallShapes[] = {make_shape(2, 5, 2, 2, 3), make_shape(2, 5, 4, 2, 3), make_shape(2, 5, 4, 1, 3)};

// The qkv rows of a grouped shape rewritten as multi-head rows [B,T,3·NH·HD]: every query head gets
// its own copy of the key/value head it reads.
std::vector<float> repeat_kv_heads(const std::vector<float>& qkv, const AttentionShape& s) {
  const int group = s.NH / s.NKV, C = s.q_dim();
  std::vector<float> mha(static_cast<size_t>(s.B) * s.T * 3 * C);
  for (int64_t row = 0; row < static_cast<int64_t>(s.B) * s.T; ++row) {
    const float* src = qkv.data() + row * s.qkv_dim();
    float* dst = mha.data() + row * 3 * C;
    for (int i = 0; i < C; ++i) dst[i] = src[i];
    for (int h = 0; h < s.NH; ++h)
      for (int i = 0; i < s.HD; ++i) {
        const int kvh = h / group;
        dst[C + h * s.HD + i] = src[C + kvh * s.HD + i];
        dst[2 * C + h * s.HD + i] = src[C + (s.NKV + kvh) * s.HD + i];
      }
  }
  return mha;
}

// Naive causal multi-head attention in double on rows [B,T,3C], C = NH·HD.
std::vector<double> naive_mha(const std::vector<float>& qkv, int B, int T, int NH, int HD) {
  const int C = NH * HD;
  std::vector<double> out(static_cast<size_t>(B) * T * C, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(HD));
  auto at = [&](int b, int t, int part, int h, int i) {
    return static_cast<double>(qkv[(static_cast<size_t>(b) * T + t) * 3 * C + part * C + h * HD + i]);
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> sc(t + 1);
        double mx = -1e300, sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          double d = 0;
          for (int i = 0; i < HD; ++i) d += at(b, t, 0, h, i) * at(b, t2, 1, h, i);
          sc[t2] = d * scale;
          mx = std::max(mx, sc[t2]);
        }
        for (auto& x : sc) sum += (x = std::exp(x - mx));
        for (int t2 = 0; t2 <= t; ++t2)
          for (int i = 0; i < HD; ++i) out[(b * T + t) * C + h * HD + i] += sc[t2] / sum * at(b, t2, 2, h, i);
      }
  return out;
}

std::vector<double> naive_attention(const std::vector<float>& qkv, const AttentionShape& s) {
  return naive_mha(repeat_kv_heads(qkv, s), s.B, s.T, s.NH, s.HD);
}

TEST(Attention, ForwardMatchesNaiveAndIsCausal) {
  for (const AttentionShape& s : kSmallShapes) {
    SCOPED_TRACE(describe(s));
    const int B = s.B, T = s.T, NH = s.NH, D = s.qkv_dim(), C = s.q_dim();
    auto qkv = random_floats(qkv_size(s), 1, -2.f, 2.f);
    std::vector<float> out(out_size(s)), att(att_size(s), 7.0f);
    attention_forward_cpu(out.data(), att.data(), qkv.data(), s);
    const auto ref = naive_attention(qkv, s);
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
      for (int j = 0; j < D; ++j) qkv2[(b * T + changed) * D + j] += 0.75f;
    std::vector<float> out2(out.size()), att2(att.size());
    attention_forward_cpu(out2.data(), att2.data(), qkv2.data(), s);
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
}

// One thread: the objective is evaluated twice per checked element, and these shapes are far too
// small to amortise an OpenMP fork each time.
TEST(Attention, BackwardFiniteDifferencesAndAccumulates) {
  for (const AttentionShape& s : kSmallShapes)
    with_threads(1, [&] {
      SCOPED_TRACE(describe(s));
      auto qkv = random_floats(qkv_size(s), 1);
      const auto R = random_floats(out_size(s), 2);
      std::vector<float> out(out_size(s)), att(att_size(s));
      auto loss = [&] {
        attention_forward_cpu(out.data(), att.data(), qkv.data(), s);
        return weighted_sum(out.data(), R.data(), out.size());
      };
      loss();
      const auto d0 = random_floats(qkv.size(), 3);
      auto dqkv = d0;
      attention_backward_cpu(dqkv.data(), R.data(), qkv.data(), att.data(), s);
      EXPECT_TRUE(gradients_match(check_gradient(qkv, minus(dqkv, d0), loss, /*max_checks=*/1000)));
      attention_backward_cpu(nullptr, R.data(), qkv.data(), att.data(), s);
    });
}

TEST(Attention, BitIdenticalAcrossThreadCounts) {
  for (int nkv : {4, 2, 1}) {
    const AttentionShape s = make_shape(2, 33, 4, nkv, 12);
    SCOPED_TRACE(describe(s));
    const auto qkv = random_floats(qkv_size(s), 1), dout = random_floats(out_size(s), 2);
    std::vector<float> outs[2], dqkvs[2];
    for (int run = 0; run < 2; ++run)
      with_threads(run + 1, [&] {
        std::vector<float> out(out_size(s)), att(att_size(s)), dqkv(qkv.size(), 0.5f);
        attention_forward_cpu(out.data(), att.data(), qkv.data(), s);
        attention_backward_cpu(dqkv.data(), dout.data(), qkv.data(), att.data(), s);
        outs[run] = out;
        dqkvs[run] = dqkv;
      });
    EXPECT_TRUE(bit_identical(outs[0], outs[1]));
    EXPECT_TRUE(bit_identical(dqkvs[0], dqkvs[1]));
  }
}

// A grouped shape computes exactly what multi-head attention computes on explicitly repeated
// key/value heads: out, att and dq bit-identical (same per-head arithmetic), and each kv head's dk,
// dv the sum of its group's per-head gradients.
TEST(Attention, GroupedEqualsMultiHeadOnRepeatedKvHeads) {
  for (int nkv : {2, 1}) {
    const AttentionShape s = make_shape(2, 19, 4, nkv, 8);
    SCOPED_TRACE(describe(s));
    const AttentionShape m = make_shape(s.B, s.T, s.NH, s.NH, s.HD);
    const int group = s.NH / s.NKV, C = s.q_dim();
    const auto qkv = random_floats(qkv_size(s), 1, -2.f, 2.f), dout = random_floats(out_size(s), 2);
    const auto qkv_m = repeat_kv_heads(qkv, s);
    std::vector<float> out(out_size(s)), att(att_size(s)), dqkv(qkv.size(), 0.0f);
    std::vector<float> out_m(out_size(m)), att_m(att_size(m)), dqkv_m(qkv_m.size(), 0.0f);
    attention_forward_cpu(out.data(), att.data(), qkv.data(), s);
    attention_forward_cpu(out_m.data(), att_m.data(), qkv_m.data(), m);
    EXPECT_TRUE(bit_identical(out, out_m));
    EXPECT_TRUE(bit_identical(att, att_m));
    attention_backward_cpu(dqkv.data(), dout.data(), qkv.data(), att.data(), s);
    attention_backward_cpu(dqkv_m.data(), dout.data(), qkv_m.data(), att_m.data(), m);
    for (int64_t row = 0; row < static_cast<int64_t>(s.B) * s.T; ++row) {
      const float* g = dqkv.data() + row * s.qkv_dim();
      const float* gm = dqkv_m.data() + row * m.qkv_dim();
      for (int i = 0; i < C; ++i) ASSERT_EQ(g[i], gm[i]) << "dq row " << row << " col " << i;
      for (int kvh = 0; kvh < s.NKV; ++kvh)
        for (int part = 1; part <= 2; ++part)
          for (int i = 0; i < s.HD; ++i) {
            double sum = 0;
            for (int h = kvh * group; h < (kvh + 1) * group; ++h) sum += gm[part * C + h * s.HD + i];
            const float got = g[C + ((part - 1) * s.NKV + kvh) * s.HD + i];
            EXPECT_NEAR(got, sum, 1e-5 * (1 + std::fabs(sum))) << (part == 1 ? "dk" : "dv") << " row " << row;
          }
    }
  }
}

}  // namespace
}  // namespace tt::test
