// The quantisers and low-precision GEMMs (kernels/quantize, kernels/matmul) on the CPU, the exact
// emulation the CUDA kernels are tested against:
//  * fp8 codes: every representable value (times a power-of-two scale) maps back to its own code;
//    every finite float rounds as an independent implementation (round_to_format) rounds it;
//    saturation, inf, NaN, flush-to-zero and their counts; transposed layout.
//  * int8: row-wise and per-tensor codes and factors, round-half-even, zero and NaN rows.
//  * delayed scaling: the scale from a known amax history (window, margin, zero and inf amax).
//  * GEMMs: fp8 within the formats' published error bound of the exact fp64 product; int8 with
//    exact int32 accumulation beyond fp32's exact range.
//  * linear layers (ops): the three products of fp8 and int8 against fp32 within the bound, the
//    statistics a step records.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/matmul/matmul.h"
#include "kernels/ops/ops.h"
#include "kernels/quantize/quantize.h"
#include "tests/kernels/grad_check.h"

namespace tt::kernels {
namespace {

using test::random_floats;

constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};
const char* name(Fp8Format f) { return f == Fp8Format::kE4M3 ? "E4M3" : "E5M2"; }
// Unit roundoff of round-to-nearest in the format's normal range: 2^-(mantissa bits + 1).
double unit_roundoff(Fp8Format f) { return f == Fp8Format::kE4M3 ? 1.0 / 16 : 1.0 / 8; }
float min_normal(Fp8Format f) { return f == Fp8Format::kE4M3 ? std::ldexp(1.0f, -6) : std::ldexp(1.0f, -14); }

uint8_t quantize_one(float x, float scale, Fp8Format f, uint32_t* over = nullptr, uint32_t* under = nullptr,
                     float* amax = nullptr) {
  uint8_t code = 0;
  float a = 0;
  uint32_t o = 0, u = 0;
  quantize_fp8_cpu(&code, &x, 1, 1, false, f, &scale, &a, &o, &u);
  if (over) *over = o;
  if (under) *under = u;
  if (amax) *amax = a;
  return code;
}

TEST(Fp8Quantize, EveryCodeRoundTripsUnderPowerOfTwoScales) {
  for (Fp8Format f : kFormats)
    for (int k = -4; k <= 4; ++k) {
      const float scale = std::ldexp(1.0f, k);
      for (int c = 0; c < 256; ++c) {
        const float v = fp8_to_f32(uint8_t(c), f);
        if (!std::isfinite(v)) continue;
        const uint8_t got = quantize_one(v / scale, scale, f);
        EXPECT_EQ(got, uint8_t(c)) << name(f) << " code " << c << " scale 2^" << k;
      }
    }
}

TEST(Fp8Quantize, RoundsAsTheGenericFormatRounding) {
  // f32_to_fp8 works on the bits; round_to_format (core/dtype.cpp) on frexp/nearbyint: independent.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (Fp8Format f : kFormats) {
    const int man = f == Fp8Format::kE4M3 ? 3 : 2, exp = f == Fp8Format::kE4M3 ? 4 : 5;
    for (int i = 0; i < 200000; ++i) {
      const float x = (i % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng));
      const float want = round_to_format(x, exp, man, fp8_max(f), /*has_inf=*/false);
      ASSERT_EQ(fp8_to_f32(f32_to_fp8(x, f), f), want) << name(f) << " x=" << x;
    }
  }
  // Ties go to even, in the normal and the subnormal range.
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.0625f)), 1.0f);   // between 1 and 1.125
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.1875f)), 1.25f);  // between 1.125 and 1.25
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(std::ldexp(0.5f, -9))), 0.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(std::ldexp(1.5f, -9))), std::ldexp(2.0f, -9));
}

TEST(Fp8Quantize, SaturatesInfAndCountsOverflowAndUnderflow) {
  for (Fp8Format f : kFormats) {
    const float max = fp8_max(f);
    uint32_t over, under;
    float amax;
    EXPECT_EQ(fp8_to_f32(quantize_one(1000.0f, 100.0f, f, &over, &under, &amax), f), max);
    EXPECT_EQ(over, 1u) << name(f);  // 1e5 is above both maxima
    EXPECT_EQ(amax, 1000.0f);
    EXPECT_EQ(fp8_to_f32(quantize_one(-INFINITY, 1.0f, f, &over), f), -max) << name(f);
    EXPECT_EQ(over, 1u);
    EXPECT_EQ(fp8_to_f32(quantize_one(max, 1.0f, f, &over), f), max);
    EXPECT_EQ(over, 0u) << "the largest finite value itself does not saturate";
    // NaN stays NaN and is neither an overflow nor part of amax.
    EXPECT_TRUE(std::isnan(fp8_to_f32(quantize_one(NAN, 1.0f, f, &over, &under, &amax), f)));
    EXPECT_EQ(over + under, 0u);
    EXPECT_EQ(amax, 0.0f);
    // Below half the smallest subnormal: flushed to zero and counted; zero itself is not.
    const float tiny = min_normal(f) / 64;
    EXPECT_EQ(fp8_to_f32(quantize_one(tiny, 1.0f, f, &over, &under), f), 0.0f);
    EXPECT_EQ(under, 1u);
    quantize_one(0.0f, 1.0f, f, &over, &under);
    EXPECT_EQ(under, 0u);
  }
}

TEST(Fp8Quantize, TransposedLayoutAndAccumulatedStatistics) {
  const int rows = 37, cols = 19;
  const auto x = random_floats(size_t(rows) * cols, 3, -1200.0f, 1200.0f);
  std::vector<uint8_t> a(x.size()), t(x.size());
  const float scale = 0.5f;
  float amax = 1.0f;  // accumulates: max(1, max |x|)
  uint32_t over = 5, under = 0;
  quantize_fp8_cpu(a.data(), x.data(), rows, cols, false, Fp8Format::kE4M3, &scale, &amax, &over, &under);
  float m = 0;
  uint32_t want_over = 5;
  for (float v : x) {
    m = std::max(m, std::fabs(v));
    want_over += std::fabs(v * scale) > 448.0f;
  }
  EXPECT_EQ(amax, m);
  EXPECT_EQ(over, want_over);
  EXPECT_GT(want_over, 5u) << "the data must reach the saturating range";
  quantize_fp8_cpu(t.data(), x.data(), rows, cols, true, Fp8Format::kE4M3, &scale, nullptr, nullptr, nullptr);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) ASSERT_EQ(t[size_t(c) * rows + r], a[size_t(r) * cols + c]) << r << "," << c;
}

TEST(Int8Quantize, RowsAndTensorCodesAndFactors) {
  // Row 0: amax 127 -> factor 1: rint halves to even (-63.5 -> -64, 0.5 -> 0). Row 1: zeros. Row 2: a NaN.
  const std::vector<float> x = {127.0f, -63.5f, 0.5f, 0.0f, 0.0f, 0.0f, 1.0f, NAN, 2.0f};
  std::vector<int8_t> q(9);
  std::vector<float> inv(3);
  quantize_int8_rows_cpu(q.data(), inv.data(), x.data(), 3, 3);
  EXPECT_EQ((std::vector<int>{q[0], q[1], q[2]}), (std::vector<int>{127, -64, 0}));
  EXPECT_EQ(inv[0], 1.0f);
  EXPECT_EQ((std::vector<int>{q[3], q[4], q[5]}), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(inv[1], 1.0f);
  EXPECT_EQ((std::vector<int>{q[6], q[7], q[8]}), (std::vector<int>{0, 0, 0}));
  EXPECT_TRUE(std::isnan(inv[2])) << "a NaN input poisons its row's product";

  const auto w = random_floats(6 * 5, 4, -3.0f, 3.0f);
  std::vector<int8_t> qw(w.size()), qt(w.size());
  float winv = 0, tinv = 0;
  quantize_int8_tensor_cpu(qw.data(), &winv, w.data(), 6, 5, false);
  quantize_int8_tensor_cpu(qt.data(), &tinv, w.data(), 6, 5, true);
  float m = 0;
  for (float v : w) m = std::max(m, std::fabs(v));
  EXPECT_EQ(winv, m / 127.0f);
  EXPECT_EQ(tinv, winv);
  int at_max = 0;
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 5; ++c) {
      const size_t i = size_t(r) * 5 + c;
      EXPECT_EQ(qw[i], int8_t(std::rint(w[i] * (127.0f / m))));
      EXPECT_EQ(qt[size_t(c) * 6 + r], qw[i]);
      at_max += std::abs(qw[i]) == 127;
    }
  EXPECT_EQ(at_max, 1) << "only the absmax element maps to ±127";
}

TEST(Fp8Scaling, ScaleFollowsTheAmaxHistoryWindowAndMargin) {
  // One E4M3 entry (index 0), history of 3, margin 1: scale = 448 / max(history) / 2.
  std::vector<float> history(3, 0.0f);
  float scale = 1.0f, scale_inv = 1.0f;
  auto update = [&](float amax, int pos) {
    fp8_update_scales_cpu(history.data(), &scale, &scale_inv, &amax, 1, 3, pos, 1);
  };
  update(0.0f, 0);
  EXPECT_EQ(scale, 1.0f) << "an all-zero history keeps the scale";
  update(8.0f, 1);
  EXPECT_EQ(scale, 28.0f);  // 448 / 8 / 2
  EXPECT_EQ(scale_inv, 1.0f / 28.0f);
  update(2.0f, 2);
  EXPECT_EQ(scale, 28.0f) << "the window's max (8) still rules";
  update(1.0f, 0);
  update(0.5f, 1);  // 8 rolls out: the history is {1, 0.5, 2}
  EXPECT_EQ(scale, 112.0f);
  update(INFINITY, 2);
  EXPECT_EQ(scale, 112.0f) << "a non-finite amax keeps the last good scale";
  // E5M2 entries (index 2 of a triple) use 57344.
  std::vector<float> h3(9, 0.0f), s3(3, 1.0f), i3(3, 1.0f);
  const float amax3[3] = {4.0f, 4.0f, 4.0f};
  fp8_update_scales_cpu(h3.data(), s3.data(), i3.data(), amax3, 3, 3, 0, 0);
  EXPECT_EQ(s3[0], 112.0f);
  EXPECT_EQ(s3[1], 112.0f);
  EXPECT_EQ(s3[2], 14336.0f);
}

// Inputs whose scaled values are all in the format's normal range (so the relative bound holds).
std::vector<float> normal_range(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(0.05f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = (rng() % 2 ? -1.0f : 1.0f) * mag(rng);
  return v;
}

TEST(LowPrecisionGemm, Fp8WithinThePublishedErrorBoundOfTheExactProduct) {
  const int M = 48, N = 40, K = 320;
  const auto a = normal_range(size_t(M) * K, 11), b = normal_range(size_t(N) * K, 12);
  for (Fp8Format fa : kFormats) {
    const Fp8Format fb = Fp8Format::kE4M3;  // the pairs the tensor cores run: E4M3 x E4M3, E5M2 x E4M3
    const float sa = fp8_max(fa) / 2, sb = fp8_max(fb) / 2, ia = 1 / sa, ib = 1 / sb;
    std::vector<uint8_t> qa(a.size()), qb(b.size());
    quantize_fp8_cpu(qa.data(), a.data(), M, K, false, fa, &sa, nullptr, nullptr, nullptr);
    quantize_fp8_cpu(qb.data(), b.data(), N, K, false, fb, &sb, nullptr, nullptr, nullptr);
    std::vector<float> out(size_t(M) * N, 0.0f);
    matmul_fp8_cpu(out.data(), qa.data(), fa, qb.data(), fb, &ia, &ib, nullptr, M, N, K, false);
    // |q(a)q(b) - ab| <= (ua + ub + ua·ub)|a||b| per product, plus fp32 accumulation (γ_K) and the
    // final scaling.
    const double ua = unit_roundoff(fa), ub = unit_roundoff(fb), gamma = K * std::ldexp(1.0, -24);
    double worst = 0, mean_rel = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double exact = 0, abs_sum = 0;
        for (int k = 0; k < K; ++k) {
          exact += double(a[size_t(i) * K + k]) * b[size_t(j) * K + k];
          abs_sum += std::fabs(double(a[size_t(i) * K + k]) * b[size_t(j) * K + k]);
        }
        const double bound = (ua + ub + ua * ub) * abs_sum + (gamma + 2 * std::ldexp(1.0, -24)) * abs_sum * 1.5;
        const double err = std::fabs(out[size_t(i) * N + j] - exact);
        worst = std::max(worst, err / bound);
        mean_rel += err / abs_sum;
      }
    EXPECT_LE(worst, 1.0) << name(fa) << " x E4M3: the worst element exceeds the bound by " << worst;
    mean_rel /= double(M) * N;
    EXPECT_GT(mean_rel, 1e-4) << "the operands were quantised";  // a test that cannot fail is a defect
  }
}

TEST(LowPrecisionGemm, Int8AccumulatesExactlyInInt32) {
  // K = 4096 of ±127 · ±127 reaches 6.6e7 > 2^24: an fp32 accumulation would round; int32 does not.
  const int M = 4, N = 3, K = 4096;
  std::mt19937_64 rng(5);
  std::vector<int8_t> a(size_t(M) * K), b(size_t(N) * K);
  for (auto& v : a) v = int8_t(int(rng() % 255) - 127);
  for (int k = 0; k < K; ++k) a[k] = 127, b[k] = 127;  // row 0 x row 0: the largest sum
  for (size_t k = K; k < b.size(); ++k) b[k] = int8_t(int(rng() % 255) - 127);
  const std::vector<float> ones(M, 1.0f);
  const float one = 1.0f;
  std::vector<float> out(size_t(M) * N);
  matmul_int8_cpu(out.data(), a.data(), ones.data(), b.data(), &one, nullptr, M, N, K, false);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int64_t exact = 0;
      for (int k = 0; k < K; ++k) exact += int64_t(a[size_t(i) * K + k]) * b[size_t(j) * K + k];
      EXPECT_EQ(out[size_t(i) * N + j], float(exact)) << i << "," << j;  // one rounding: int32 -> fp32
    }
  EXPECT_EQ(out[0], float(int64_t(K) * 127 * 127));
}

// The fp32 linear layer's three products, the reference for the low-precision ones.
struct Products {
  std::vector<float> out, dinp, dw;
};
Products linear_products(ops::MatmulPrecision p, const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>& dy, int M, int K, int N, const ops::LinearPrecision& state) {
  ops::LinearPrecision lp = state;
  lp.precision = p;
  Products r{std::vector<float>(size_t(M) * N), std::vector<float>(size_t(M) * K, 0.0f),
             std::vector<float>(size_t(N) * K, 0.0f)};
  const Exec cpu;
  ops::linear_forward(cpu, DType::kF32, r.out.data(), x.data(), w.data(), nullptr, M, K, N, lp);
  ops::linear_backward(cpu, DType::kF32, r.dinp.data(), r.dw.data(), nullptr, dy.data(), x.data(), w.data(), M, K, N,
                       lp);
  return r;
}

// ‖got - want‖ / ‖want‖.
double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

TEST(LowPrecisionLinear, Fp8AndInt8ProductsTrackFp32AndRecordTheStepsStatistics) {
  const int M = 64, K = 96, N = 80;
  const auto x = random_floats(size_t(M) * K, 21, -2.0f, 2.0f), w = random_floats(size_t(N) * K, 22, -0.1f, 0.1f);
  const auto dy = random_floats(size_t(M) * N, 23, -1e-3f, 1e-3f);
  const Products ref = linear_products(ops::MatmulPrecision::kDefault, x, w, dy, M, K, N, {});

  // fp8 with scales from the tensors' own absmax (what delayed scaling converges to).
  auto absmax = [](const std::vector<float>& v) {
    float m = 0;
    for (float a : v) m = std::max(m, std::fabs(a));
    return m;
  };
  const float scale[3] = {448.0f / absmax(x), 448.0f / absmax(w), 57344.0f / absmax(dy)};
  const float scale_inv[3] = {1 / scale[0], 1 / scale[1], 1 / scale[2]};
  float amax[3] = {0, 0, 0};
  uint32_t counts[6] = {};
  const Products fp8 = linear_products(ops::MatmulPrecision::kFp8, x, w, dy, M, K, N,
                                       {ops::MatmulPrecision::kFp8, scale, scale_inv, amax, counts});
  // Random signs: relative error ~ the formats' roundoff / sqrt(3) per operand.
  EXPECT_LT(rel_error(fp8.out, ref.out), 0.06);
  EXPECT_LT(rel_error(fp8.dinp, ref.dinp), 0.1);
  EXPECT_LT(rel_error(fp8.dw, ref.dw), 0.1);
  EXPECT_GT(rel_error(fp8.out, ref.out), 1e-3) << "the products were quantised";
  EXPECT_EQ(amax[0], absmax(x));
  EXPECT_EQ(amax[1], absmax(w));
  EXPECT_EQ(amax[2], absmax(dy)) << "dy is recorded once, by backward";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(counts[i], 0u) << "nothing saturates at the absmax scale";

  // int8: forward and input gradient quantised, the weight gradient exact in fp32.
  const Products int8 = linear_products(ops::MatmulPrecision::kInt8, x, w, dy, M, K, N, {});
  EXPECT_LT(rel_error(int8.out, ref.out), 0.02);
  EXPECT_LT(rel_error(int8.dinp, ref.dinp), 0.02);
  EXPECT_GT(rel_error(int8.out, ref.out), 1e-5);
  EXPECT_EQ(int8.dw, ref.dw) << "SwitchBack keeps the weight gradient in the working precision";
}

}  // namespace
}  // namespace tt::kernels
