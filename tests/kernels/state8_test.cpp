// Tests for kernels/adamw/state8: the dynamic maps and nearest-code search (brute force), the
// block-wise round-trip error bound and idempotence on runs that start mid-block, the 8-bit and
// bf16-state AdamW against fp32 AdamW on a linear regression, splitting a run at 256-boundaries,
// all-zero blocks and NaN propagation. Measured figures are printed ("[ measured ]") so changes in
// accuracy show up in the log.
#include "kernels/adamw/state8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/adamw/adamw.h"

namespace tt::test {
namespace {

using namespace tt::kernels;

std::vector<float> normal_floats(size_t n, uint64_t seed, float stddev = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// fp32 rounding of x / absmax and of map[code] * absmax, relative to the absmax: a few ulps of 1.
constexpr float kRoundingSlack = 4.0f / (1 << 23);

float largest_gap(const std::array<float, 256>& map) {
  float gap = 0.0f;
  for (int i = 1; i < 256; ++i) gap = std::max(gap, map[i] - map[i - 1]);
  return gap;
}

// Nearest code by linear scan; the first (lowest) index wins a tie, as quantize_nearest.
uint8_t nearest_brute(const std::array<float, 256>& map, float x) {
  int best = 0;
  for (int k = 1; k < 256; ++k)
    if (std::fabs(map[k] - x) < std::fabs(map[best] - x)) best = k;
  return static_cast<uint8_t>(best);
}

// Block-wise data: block b of the global grid holds normal values of stddev 10^U(-4, 2); unsigned
// data are their squares (like v = g²).
std::vector<float> blockwise_data(int64_t n, int64_t global_begin, bool is_signed, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> log_scale(-4.0f, 2.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  float scale = 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || (global_begin + i) % kState8Block == 0) scale = std::pow(10.0f, log_scale(rng));
    const float g = normal(rng) * scale;
    x[i] = is_signed ? g : g * g;
  }
  return x;
}

// First local index of block b of the run, and its end.
std::pair<int64_t, int64_t> block_of(int64_t global_begin, int64_t n, int64_t b) {
  const int64_t start = (global_begin / kState8Block + b) * kState8Block;
  return {std::max(start, global_begin) - global_begin,
          std::min(start + kState8Block, global_begin + n) - global_begin};
}

// ---- 1. maps ----------------------------------------------------------------------------------
TEST(State8, DynamicMaps) {
  for (bool is_signed : {true, false}) {
    const auto map = dynamic_map(is_signed);
    EXPECT_EQ(map, cached_dynamic_map(is_signed));
    for (int i = 1; i < 256; ++i) ASSERT_LT(map[i - 1], map[i]) << "signed=" << is_signed << " i=" << i;
    EXPECT_EQ(map[state8_zero_code(is_signed)], 0.0f);
    EXPECT_EQ(map[255], 1.0f);
    EXPECT_EQ(map[0], is_signed ? -1.0f : 0.0f);
    // Dynamic: codes are dense near 1 and reach down to ~1e-6 of the block absmax.
    int below_1e_3 = 0;
    for (float x : map) below_1e_3 += x > 0.0f && x < 1e-3f;
    const float smallest = map[state8_zero_code(is_signed) + 1];
    EXPECT_LT(smallest, 1e-6f);
    EXPECT_GT(smallest, 1e-7f);
    EXPECT_GT(below_1e_3, 5);
    std::printf("[ measured ] %s map: smallest positive %.3g, largest gap %.5f\n", is_signed ? "signed" : "unsigned",
                smallest, largest_gap(map));
  }
}

TEST(State8, CodesPerSign) {
  const auto map = dynamic_map(false);
  EXPECT_EQ(std::count_if(map.begin(), map.end(), [](float x) { return x > 0.0f; }), 255);
  const auto smap = dynamic_map(true);
  EXPECT_EQ(std::count_if(smap.begin(), smap.end(), [](float x) { return x > 0.0f; }), 128);
  EXPECT_EQ(std::count_if(smap.begin(), smap.end(), [](float x) { return x < 0.0f; }), 127);
}

TEST(State8, QuantizeNearestIsTheNearestCode) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> uniform(-1.2f, 1.2f), log_mag(-9.0f, 0.2f);
  for (bool is_signed : {true, false}) {
    const auto map = dynamic_map(is_signed);
    std::vector<float> xs;
    for (int i = 0; i < 100000; ++i) xs.push_back(uniform(rng));
    for (int i = 0; i < 100000; ++i)  // magnitudes spread over the exponent range, both signs
      xs.push_back((i % 2 ? -1.0f : 1.0f) * std::pow(10.0f, log_mag(rng)));
    for (int k = 0; k < 256; ++k) {  // the codes, their float midpoints (ties) and neighbours
      xs.push_back(map[k]);
      if (k < 255) {
        const float mid = map[k] + (map[k + 1] - map[k]) / 2;
        xs.push_back(mid);
        xs.push_back(std::nextafter(mid, -2.0f));
        xs.push_back(std::nextafter(mid, 2.0f));
      }
    }
    xs.push_back(0.0f);
    xs.push_back(-0.0f);
    size_t wrong = 0;
    for (float x : xs) {
      const uint8_t got = quantize_nearest(map.data(), x), want = nearest_brute(map, x);
      if (got != want && wrong++ < 5)
        ADD_FAILURE() << "x=" << x << " got " << int(got) << " want " << int(want) << " signed=" << is_signed;
    }
    EXPECT_EQ(wrong, 0u);
    for (int k = 0; k < 256; ++k) EXPECT_EQ(quantize_nearest(map.data(), map[k]), k);
  }
}

TEST(State8, BlockCount) {
  EXPECT_EQ(state8_blocks(0, 0), 0);
  EXPECT_EQ(state8_blocks(300, 0), 0);
  EXPECT_EQ(state8_blocks(0, 1), 1);
  EXPECT_EQ(state8_blocks(0, 256), 1);
  EXPECT_EQ(state8_blocks(0, 257), 2);
  EXPECT_EQ(state8_blocks(255, 1), 1);
  EXPECT_EQ(state8_blocks(255, 2), 2);
  EXPECT_EQ(state8_blocks(100, 1000), 5);  // 100..256, 3 whole blocks, 1024..1100
  EXPECT_EQ(state8_blocks(256, 512), 2);
  EXPECT_EQ(state8_blocks(300, 50), 1);
}

// ---- 2. round-trip error ----------------------------------------------------------------------
TEST(State8, RoundTripErrorBound) {
  for (bool is_signed : {true, false}) {
    for (int64_t global_begin : {int64_t{0}, int64_t{100}}) {
      const int64_t n = 256 * 200 + 77;
      const auto x = blockwise_data(n, global_begin, is_signed, 11 + global_begin);
      const int64_t blocks = state8_blocks(global_begin, n);
      std::vector<uint8_t> codes(n);
      std::vector<float> absmax(blocks), y(n);
      quantize_state8_cpu(codes.data(), absmax.data(), x.data(), n, global_begin, is_signed);
      dequantize_state8_cpu(y.data(), codes.data(), absmax.data(), n, global_begin, is_signed);
      const float half_gap = largest_gap(dynamic_map(is_signed)) / 2;
      double err_norm = 0, x_norm = 0, worst_over_absmax = 0;  // sums of |err|/absmax, |x|/absmax
      for (int64_t b = 0; b < blocks; ++b) {
        const auto [begin, end] = block_of(global_begin, n, b);
        float amax = 0.0f;
        int64_t arg = begin;
        for (int64_t i = begin; i < end; ++i)
          if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), arg = i;
        ASSERT_EQ(absmax[b], amax) << "block " << b;
        EXPECT_EQ(y[arg], x[arg]) << "the block's largest |x| must round-trip exactly, block " << b;
        for (int64_t i = begin; i < end; ++i) {
          const double err = std::fabs(double(y[i]) - x[i]);
          ASSERT_LE(err, (half_gap + kRoundingSlack) * amax) << "block " << b << " i=" << i << " x=" << x[i];
          worst_over_absmax = std::max(worst_over_absmax, err / amax);
          err_norm += err / amax;
          x_norm += std::fabs(x[i]) / amax;
        }
      }
      const double rel = err_norm / x_norm;
      std::printf("[ measured ] %s, begin %lld: mean|err|/mean|x| = %.4f%%, max |err|/absmax = %.5f (bound %.5f)\n",
                  is_signed ? "signed normal" : "unsigned normal^2", static_cast<long long>(global_begin), 100 * rel,
                  worst_over_absmax, half_gap);
      // Measured 1.04-1.07% (signed) and 0.66-0.68% (unsigned); the bounds leave headroom for other data.
      EXPECT_LT(rel, is_signed ? 0.015 : 0.01);
    }
  }
}

// ---- 3. idempotence ---------------------------------------------------------------------------
TEST(State8, QuantizeOfDequantizeIsIdentity) {
  const std::pair<int64_t, int64_t> runs[] = {{100, 1000}, {0, 300}, {300, 50}, {255, 2}, {512, 256}};
  for (bool is_signed : {true, false}) {
    for (const auto& [global_begin, n] : runs) {
      const auto x = blockwise_data(n, global_begin, is_signed, 5);
      const int64_t blocks = state8_blocks(global_begin, n);
      std::vector<uint8_t> codes(n), codes2(n);
      std::vector<float> absmax(blocks), absmax2(blocks), y(n);
      quantize_state8_cpu(codes.data(), absmax.data(), x.data(), n, global_begin, is_signed);
      dequantize_state8_cpu(y.data(), codes.data(), absmax.data(), n, global_begin, is_signed);
      quantize_state8_cpu(codes2.data(), absmax2.data(), y.data(), n, global_begin, is_signed);
      EXPECT_EQ(codes2, codes) << "signed=" << is_signed << " run " << global_begin << "+" << n;
      EXPECT_EQ(absmax2, absmax) << "signed=" << is_signed << " run " << global_begin << "+" << n;
    }
  }
}

// ---- 4. AdamW on a linear regression ----------------------------------------------------------
// y = X w* + 0.1 noise with N = 4000 samples and d = 2000 features whose scales c_j = 10^U(-1, 0.5)
// differ across (and inside) quantisation blocks; minibatches of 512 rows, 200 steps from w = 0,
// cosine learning rate from 0.3 to 0. Parameters are a run starting at global index 300 (blocks
// misaligned with the run). Every variant sees the same minibatches.
struct Regression {
  static constexpr int64_t kSamples = 4000, kDim = 2000, kBatch = 512, kSteps = 200, kBegin = 300;
  std::vector<float> X, y;
  Regression() {
    std::mt19937_64 rng(2024);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> log_c(-1.0f, 0.5f);
    std::vector<float> c(kDim), w(kDim);
    for (auto& s : c) s = std::pow(10.0f, log_c(rng));
    for (auto& s : w) s = normal(rng);
    X.resize(kSamples * kDim);
    y.resize(kSamples);
    for (int64_t r = 0; r < kSamples; ++r) {
      double dot = 0;
      for (int64_t j = 0; j < kDim; ++j) {
        X[r * kDim + j] = c[j] * normal(rng);
        dot += double(X[r * kDim + j]) * w[j];
      }
      y[r] = static_cast<float>(dot + 0.1 * normal(rng));
    }
  }
  // Mean squared error / 2 over all samples.
  double loss(const std::vector<float>& w) const {
    double total = 0;
#pragma omp parallel for reduction(+ : total)
    for (int64_t r = 0; r < kSamples; ++r) {
      double dot = 0;
      for (int64_t j = 0; j < kDim; ++j) dot += double(X[r * kDim + j]) * w[j];
      total += (dot - y[r]) * (dot - y[r]);
    }
    return total / (2 * kSamples);
  }
  // Minibatch gradient of step `step` (rows drawn by a seeded generator).
  void grad(const std::vector<float>& w, int64_t step, uint64_t seed, std::vector<float>* g) const {
    std::mt19937_64 rng(seed * 1000003 + step);
    std::uniform_int_distribution<int64_t> row(0, kSamples - 1);
    std::vector<int64_t> rows(kBatch);
    std::vector<double> resid(kBatch);
    for (auto& r : rows) r = row(rng);
#pragma omp parallel for
    for (int64_t k = 0; k < kBatch; ++k) {
      double dot = 0;
      for (int64_t j = 0; j < kDim; ++j) dot += double(X[rows[k] * kDim + j]) * w[j];
      resid[k] = (dot - y[rows[k]]) / kBatch;
    }
    std::vector<double> acc(kDim, 0.0);
    constexpr int64_t kChunk = 200;  // columns per task; each column sums its rows in order
#pragma omp parallel for
    for (int64_t c = 0; c < kDim; c += kChunk) {
      for (int64_t k = 0; k < kBatch; ++k) {
        const float* x = &X[rows[k] * kDim];
        for (int64_t j = c; j < c + kChunk; ++j) acc[j] += resid[k] * x[j];
      }
    }
    g->resize(kDim);
    for (int64_t j = 0; j < kDim; ++j) (*g)[j] = static_cast<float>(acc[j]);
  }
  static AdamWHyper hyper(int64_t step) {
    const float lr = 0.3f * 0.5f * (1.0f + std::cos(3.14159265f * (step - 1) / kSteps));
    return AdamWHyper{lr, 0.9f, 0.999f, 1e-8f, 0.0f, step};
  }
};

enum class State { kF32, kInt8, kBF16 };

double train(const Regression& problem, State state, std::vector<float>* w_out = nullptr, uint64_t seed = 0) {
  const int64_t d = Regression::kDim, begin = Regression::kBegin, blocks = state8_blocks(begin, d);
  std::vector<float> w(d, 0.0f), g, m(d, 0.0f), v(d, 0.0f), m_absmax(blocks, 0.0f), v_absmax(blocks, 0.0f);
  std::vector<uint8_t> m_codes(d, state8_zero_code(true)), v_codes(d, state8_zero_code(false));
  std::vector<uint16_t> m16(d, 0), v16(d, 0);
  for (int64_t step = 1; step <= Regression::kSteps; ++step) {
    problem.grad(w, step, seed, &g);
    const AdamWHyper h = Regression::hyper(step);
    switch (state) {
      case State::kF32:
        adamw_update_cpu(w.data(), m.data(), v.data(), g.data(), d, h, 1.0f);
        break;
      case State::kInt8:
        adamw_update_state8_cpu(w.data(), m_codes.data(), m_absmax.data(), v_codes.data(), v_absmax.data(), g.data(), d,
                                begin, h, 1.0f);
        break;
      case State::kBF16:
        adamw_update_bf16_state_cpu(w.data(), m16.data(), v16.data(), g.data(), d, h, 1.0f);
        break;
    }
  }
  if (w_out != nullptr) *w_out = w;
  return problem.loss(w);
}

TEST(State8, AdamWTracksFp32OnLinearRegression) {
  const Regression problem;
  const double initial = problem.loss(std::vector<float>(Regression::kDim, 0.0f));
  std::vector<float> w32, w8, w16;
  const double l32 = train(problem, State::kF32, &w32);
  const double l8 = train(problem, State::kInt8, &w8);
  const double l16 = train(problem, State::kBF16, &w16);
  std::vector<float> w32b;  // fp32 again on other minibatches: the spread the noise alone causes
  const double l32b = train(problem, State::kF32, &w32b, 1);
  auto rms_diff = [&](const std::vector<float>& a) {
    double s = 0, t = 0;
    for (size_t j = 0; j < a.size(); ++j) s += (a[j] - w32[j]) * (a[j] - w32[j]), t += w32[j] * w32[j];
    return std::sqrt(s / t);
  };
  std::printf(
      "[ measured ] loss: initial %.4f, fp32 %.6f, int8 state %.6f (%+.3f%%), bf16 state %.6f (%+.3f%%); "
      "|w - w_fp32| / |w_fp32|: int8 %.4f, bf16 %.4f; fp32 on other minibatches: loss %.6f (%+.3f%%), |w - w_fp32| "
      "/ |w_fp32| %.4f\n",
      initial, l32, l8, 100 * (l8 / l32 - 1), l16, 100 * (l16 / l32 - 1), rms_diff(w8), rms_diff(w16), l32b,
      100 * (l32b / l32 - 1), rms_diff(w32b));
  // The yardstick is the minibatch noise: fp32 AdamW on other minibatches ends 17% (in w) and 11% (in the
  // loss) away from the fp32 run. Measured: int8 state 3.3% away in w (its loss 10% lower: quantising v
  // makes the steps slightly larger on average, which helps this still-converging problem), bf16 state
  // 0.28% in w and +2.2% in the loss. The bounds: closer to fp32 than half (int8) or a tenth (bf16) of the
  // noise spread in w, no more than 25% (int8) or 10% (bf16) worse in the loss, and the loss down to
  // less than 5e-4 of the initial one for all (fp32: 1.7e-4).
  const double spread = rms_diff(w32b);
  EXPECT_LT(l32, initial * 5e-4);
  EXPECT_LT(l8, initial * 5e-4);
  EXPECT_LT(l16, initial * 5e-4);
  EXPECT_LT(rms_diff(w8), 0.5 * spread);
  EXPECT_LT(rms_diff(w16), 0.1 * spread);
  EXPECT_LT(l8, 1.25 * l32);
  EXPECT_LT(l16, 1.10 * l32);
}

// A run split into calls at multiples of 256 gives the bits of one call over the whole run.
TEST(State8, SplitRunEqualsOneCall) {
  const int64_t begin = 100, n = 1000;
  const auto p0 = normal_floats(n, 1);
  const auto m0 = normal_floats(n, 2, 0.01f);
  auto v0 = normal_floats(n, 3, 0.01f);
  for (auto& x : v0) x = x * x;
  const int64_t blocks = state8_blocks(begin, n);
  std::vector<uint8_t> mc0(n), vc0(n);
  std::vector<float> ma0(blocks), va0(blocks);
  quantize_state8_cpu(mc0.data(), ma0.data(), m0.data(), n, begin, true);
  quantize_state8_cpu(vc0.data(), va0.data(), v0.data(), n, begin, false);

  auto whole_p = p0, split_p = p0;
  auto whole_mc = mc0, whole_vc = vc0, split_mc = mc0, split_vc = vc0;
  auto whole_ma = ma0, whole_va = va0, split_ma = ma0, split_va = va0;
  const int64_t cuts[] = {0, 156, 668, n};  // global 100 | 256 | 768 | 1100
  for (int64_t step = 1; step <= 3; ++step) {
    const auto g = normal_floats(n, 10 + step);
    const AdamWHyper h{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, step};
    adamw_update_state8_cpu(whole_p.data(), whole_mc.data(), whole_ma.data(), whole_vc.data(), whole_va.data(),
                            g.data(), n, begin, h, 0.5f);
    int64_t block = 0;
    for (int k = 0; k + 1 < 4; ++k) {
      const int64_t lo = cuts[k], len = cuts[k + 1] - cuts[k];
      adamw_update_state8_cpu(split_p.data() + lo, split_mc.data() + lo, split_ma.data() + block, split_vc.data() + lo,
                              split_va.data() + block, g.data() + lo, len, begin + lo, h, 0.5f);
      block += state8_blocks(begin + lo, len);
    }
    ASSERT_EQ(block, blocks);
  }
  EXPECT_EQ(split_p, whole_p);
  EXPECT_EQ(split_mc, whole_mc);
  EXPECT_EQ(split_vc, whole_vc);
  EXPECT_EQ(split_ma, whole_ma);
  EXPECT_EQ(split_va, whole_va);
  EXPECT_NE(whole_mc, mc0);  // the state did move
}

// ---- 5. zero blocks, NaN ----------------------------------------------------------------------
TEST(State8, AllZeroBlock) {
  const int64_t begin = 200, n = 600;  // blocks: 200..256, 256..512, 512..768, 768..800
  for (bool is_signed : {true, false}) {
    std::vector<float> x(n, 0.0f);
    for (int64_t i = 0; i < 56; ++i) x[i] = is_signed ? 0.5f - i : 1.0f + i;  // block 0 non-zero
    x[70] = -0.0f;                                                            // block 1 all (signed) zeros
    const int64_t blocks = state8_blocks(begin, n);
    std::vector<uint8_t> codes(n);
    std::vector<float> absmax(blocks, -1.0f), y(n, 1.0f);
    quantize_state8_cpu(codes.data(), absmax.data(), x.data(), n, begin, is_signed);
    dequantize_state8_cpu(y.data(), codes.data(), absmax.data(), n, begin, is_signed);
    EXPECT_GT(absmax[0], 0.0f);
    for (int64_t b = 1; b < blocks; ++b) {
      EXPECT_EQ(absmax[b], 0.0f) << b;
      EXPECT_FALSE(std::signbit(absmax[b])) << b;
    }
    for (int64_t i = 56; i < n; ++i) {
      ASSERT_EQ(codes[i], state8_zero_code(is_signed)) << i;
      ASSERT_EQ(y[i], 0.0f) << i;
    }
  }
}

TEST(State8, UpdateFromZeroState) {
  const int64_t begin = 40, n = 700;
  const int64_t blocks = state8_blocks(begin, n);
  const auto p0 = normal_floats(n, 4);
  auto g = normal_floats(n, 5, 0.3f);
  for (int64_t i = 216; i < 472; ++i) g[i] = 0.0f;  // global block 256..512 gets no gradient
  std::vector<uint8_t> mc(n, state8_zero_code(true)), vc(n, state8_zero_code(false));
  std::vector<float> ma(blocks, 0.0f), va(blocks, 0.0f);
  auto p8 = p0, p32 = p0;
  std::vector<float> m32(n, 0.0f), v32(n, 0.0f);
  const AdamWHyper h{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1};
  adamw_update_state8_cpu(p8.data(), mc.data(), ma.data(), vc.data(), va.data(), g.data(), n, begin, h, 1.0f);
  adamw_update_cpu(p32.data(), m32.data(), v32.data(), g.data(), n, h, 1.0f);
  // The parameter step uses the fp32 moments before requantisation: the first step is fp32 AdamW's.
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(p8[i], p32[i], 1e-6f * std::fabs(p32[i]) + 1e-9f) << i;
  EXPECT_EQ(ma[1], 0.0f);  // the block without gradient stays an all-zero block
  EXPECT_EQ(va[1], 0.0f);
  std::vector<float> m(n), v(n);
  dequantize_state8_cpu(m.data(), mc.data(), ma.data(), n, begin, true);
  dequantize_state8_cpu(v.data(), vc.data(), va.data(), n, begin, false);
  const float smap_gap = largest_gap(dynamic_map(true)) / 2, umap_gap = largest_gap(dynamic_map(false)) / 2;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto [lo, hi] = block_of(begin, n, b);
    for (int64_t i = lo; i < hi; ++i) {
      ASSERT_LE(std::fabs(m[i] - m32[i]), (smap_gap + kRoundingSlack) * ma[b]) << i;
      ASSERT_LE(std::fabs(v[i] - v32[i]), (umap_gap + kRoundingSlack) * va[b]) << i;
    }
  }
}

TEST(State8, NaNMakesItsBlockNaN) {
  const int64_t begin = 0, n = 512;
  auto x = normal_floats(n, 9);
  x[300] = std::nanf("");
  std::vector<uint8_t> codes(n);
  std::vector<float> absmax(2), y(n);
  quantize_state8_cpu(codes.data(), absmax.data(), x.data(), n, begin, true);
  dequantize_state8_cpu(y.data(), codes.data(), absmax.data(), n, begin, true);
  EXPECT_FALSE(std::isnan(absmax[0]));
  EXPECT_TRUE(std::isnan(absmax[1]));
  for (int64_t i = 0; i < 256; ++i) ASSERT_FALSE(std::isnan(y[i])) << i;
  for (int64_t i = 256; i < n; ++i) ASSERT_TRUE(std::isnan(y[i])) << i;
}

// bf16 state: one step is fp32 AdamW with m and v read from and rounded back to bf16.
TEST(State8, BF16StateStep) {
  const int64_t n = 1000;
  const auto p0 = normal_floats(n, 1), g = normal_floats(n, 2);
  auto m0 = normal_floats(n, 3, 0.1f), v0 = normal_floats(n, 4, 0.1f);
  for (auto& x : v0) x = x * x;
  std::vector<uint16_t> m16(n), v16(n);
  for (int64_t i = 0; i < n; ++i) m16[i] = f32_to_bf16(m0[i]), v16[i] = f32_to_bf16(v0[i]);
  std::vector<float> m(n), v(n);
  for (int64_t i = 0; i < n; ++i) m[i] = bf16_to_f32(m16[i]), v[i] = bf16_to_f32(v16[i]);
  auto p16 = p0, p32 = p0;
  const AdamWHyper h{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 5};
  adamw_update_bf16_state_cpu(p16.data(), m16.data(), v16.data(), g.data(), n, h, 0.5f);
  adamw_update_cpu(p32.data(), m.data(), v.data(), g.data(), n, h, 0.5f);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(p16[i], p32[i], 1e-6f * std::fabs(p32[i]) + 1e-9f) << i;
    // fp32 moments may differ from the reference by an fma rounding: allow one bf16 step.
    ASSERT_LE(std::fabs(bf16_to_f32(m16[i]) - m[i]), std::fabs(m[i]) * (1.0f / 128)) << i;
    ASSERT_LE(std::fabs(bf16_to_f32(v16[i]) - v[i]), std::fabs(v[i]) * (1.0f / 128)) << i;
  }
}

}  // namespace
}  // namespace tt::test
