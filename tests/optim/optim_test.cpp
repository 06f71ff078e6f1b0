// LR schedule, gradient clipping and the AdamW wrapper (decay mask) against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "optim/lr_schedule.h"

namespace tt {
namespace {

TEST(LrSchedule, LinearWarmupThenCosineToFloor) {
  LrSchedule s{1.0f, 0.1f, 4, 14};
  EXPECT_FLOAT_EQ(s.lr_at(0), 0.25f);
  EXPECT_FLOAT_EQ(s.lr_at(1), 0.50f);
  EXPECT_FLOAT_EQ(s.lr_at(3), 1.00f);
  EXPECT_FLOAT_EQ(s.lr_at(4), 1.00f);  // first decay step: progress 0
  // decay steps 4..13 (10 steps), progress = (step-4)/9; midpoint of cosine at progress 0.5.
  EXPECT_NEAR(s.lr_at(13), 0.1f, 1e-7);
  const double p = 5.0 / 9.0;
  EXPECT_NEAR(s.lr_at(9), 0.1 + 0.5 * (1 + std::cos(M_PI * p)) * 0.9, 1e-6);
  for (int i = 4; i < 13; ++i) EXPECT_GE(s.lr_at(i), s.lr_at(i + 1));
}

TEST(LrSchedule, NoWarmupStartsAtPeak) {
  LrSchedule s{6e-4f, 0.0f, 0, 100};
  EXPECT_FLOAT_EQ(s.lr_at(0), 6e-4f);
  EXPECT_NEAR(s.lr_at(99), 0.0f, 1e-12);
}

TEST(GradClip, NormAndScale) {
  std::vector<float> g = {3.0f, 4.0f, 0.0f, -12.0f};  // norm 13
  EXPECT_DOUBLE_EQ(global_grad_norm(g.data(), 4), 13.0);
  EXPECT_FLOAT_EQ(clip_scale(13.0, 1.0f), 1.0f / 13.0f);
  EXPECT_FLOAT_EQ(clip_scale(13.0, 20.0f), 1.0f);
  EXPECT_FLOAT_EQ(clip_scale(13.0, 0.0f), 1.0f);  // off
  EXPECT_FLOAT_EQ(clip_scale(NAN, 1.0f), 0.0f);
  EXPECT_FLOAT_EQ(clip_scale(INFINITY, 1.0f), 0.0f);
}

// Two ranges: [0,2) decayed, [2,3) not. One step with lr 0.1, wd 0.5, grad scale 0.5.
TEST(AdamW, DecayOnlyOnMarkedRangesAndBiasCorrectedFirstStep) {
  AdamW opt({{0, 2, true, 0}, {2, 1, false, 2}}, 3, AdamWSettings{0.9f, 0.95f, 1e-8f, 0.5f}, AdamWOptions{});
  std::vector<float> w = {1.0f, -2.0f, 3.0f};
  std::vector<float> g = {0.4f, 0.4f, -0.2f};
  opt.step(w.data(), g.data(), 0.1f, 0.5f);
  // Step 1: mhat = g', vhat = g'^2 -> update = sign(g') (up to eps).
  EXPECT_NEAR(w[0], 1.0 - 0.1 * (1.0 + 0.5 * 1.0), 1e-6);
  EXPECT_NEAR(w[1], -2.0 - 0.1 * (1.0 + 0.5 * -2.0), 1e-6);
  EXPECT_NEAR(w[2], 3.0 - 0.1 * (-1.0), 1e-6);  // no decay
  EXPECT_EQ(opt.steps_taken(), 1);
  EXPECT_NEAR(opt.read_moments(0, 0, 3)[0], 0.1 * 0.2, 1e-7);
  EXPECT_NEAR(opt.read_moments(1, 0, 3)[2], 0.05 * 0.01, 1e-9);
}

TEST(AdamW, SecondStepUsesMomentsHandComputed) {
  AdamW opt({{0, 1, false, 0}}, 1, AdamWSettings{0.9f, 0.95f, 0.0f, 0.0f}, AdamWOptions{});
  std::vector<float> w = {0.0f};
  std::vector<float> g1 = {1.0f}, g2 = {-1.0f};
  opt.step(w.data(), g1.data(), 1.0f, 1.0f);
  opt.step(w.data(), g2.data(), 1.0f, 1.0f);
  // m2 = 0.9*0.1 - 0.1 = -0.01, v2 = 0.95*0.05 + 0.05 = 0.0975
  const double mhat = -0.01 / (1 - 0.81), vhat = 0.0975 / (1 - 0.9025);
  EXPECT_NEAR(w[0], -1.0 - mhat / std::sqrt(vhat), 1e-6);
}

// A rank's part of the buffer as optimizer ranges: each trainable tensor clipped to [begin, end),
// local offsets from where the part starts in the optimizer's buffer, the flat buffer's index kept
// for the stochastic rounding, neighbours with equal decay merged.
TEST(AdamW, RangesOfAPieceKeepTheirGlobalIndex) {
  std::vector<ParamInfo> tensors(4);
  const int64_t sizes[] = {10, 5, 5, 20};
  const bool decay[] = {true, false, false, true};
  int64_t at = 0;
  for (int i = 0; i < 4; ++i) {
    tensors[size_t(i)].shape = {sizes[i]};
    tensors[size_t(i)].offset = at;
    tensors[size_t(i)].decay = decay[i];
    at += sizes[i];
  }
  tensors[3].trainable = false;  // frozen: no optimizer state, no update
  const auto r = adamw_ranges(tensors, 7, 30, /*local=*/100);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].offset, 100);  // [7, 10) of the first tensor
  EXPECT_EQ(r[0].size, 3);
  EXPECT_EQ(r[0].global, 7);
  EXPECT_TRUE(r[0].decay);
  EXPECT_EQ(r[1].offset, 103);  // [10, 20): the two undecayed tensors merged
  EXPECT_EQ(r[1].size, 10);
  EXPECT_EQ(r[1].global, 10);
  EXPECT_FALSE(r[1].decay);
}

// fp32 parameters have no master copy: checkpoints read the parameters themselves, and loading
// writes them; moments load by range.
TEST(AdamW, Fp32StateLoadsAndReadsBackByRange) {
  AdamW opt({{0, 4, true, 0}}, 4, AdamWSettings{}, AdamWOptions{});
  std::vector<float> w(4, 0.0f);
  const float values[] = {1.5f, -2.0f};
  opt.load_params(w.data(), 1, values, 2);
  EXPECT_EQ(w, (std::vector<float>{0.0f, 1.5f, -2.0f, 0.0f}));
  EXPECT_EQ(opt.fp32_params(w.data()), w.data());
  const float m[] = {0.25f}, v[] = {0.5f};
  opt.load_moments(3, m, v, 1);
  EXPECT_EQ(opt.read_moments(0, 0, 4)[3], 0.25f);
  EXPECT_EQ(opt.read_moments(1, 0, 4)[3], 0.5f);
  EXPECT_EQ(opt.read_moments(1, 0, 4)[0], 0.0f);
}

// bf16 and int8 moments travel as fp32 values: loading what was read gives the same state back
// (bf16 widens exactly; int8 block-wise quantisation is idempotent), so checkpoints resume
// bit-exactly and across state dtypes. int8 keeps a range under kState8MinElements in fp32, and
// a run of two ranges (one starting mid-block) quantises on the global block grid.
TEST(AdamW, CompactStatesRoundTripThroughFp32Values) {
  const int64_t big = 3000 + kState8MinElements, small = 100, n = big + small;
  const std::vector<ParamRange> ranges = {{0, big, true, 1000}, {big, small, false, 1000 + big}};
  std::vector<float> m(static_cast<size_t>(n)), v(m.size());
  for (int64_t i = 0; i < n; ++i) {
    m[size_t(i)] = 1e-3f * std::sin(0.37f * float(i)) * float(1 + i % 7);
    v[size_t(i)] = 1e-6f * float(1 + (i * 7919) % 1000);
  }
  for (StateDType state : {StateDType::kBf16, StateDType::kInt8}) {
    SCOPED_TRACE(state_dtype_name(state));
    AdamWOptions o;
    o.state = state;
    AdamW opt(ranges, n, AdamWSettings{}, o);
    AdamW fp32(ranges, n, AdamWSettings{}, AdamWOptions{});
    EXPECT_LT(opt.state_bytes(), fp32.state_bytes() / (state == StateDType::kInt8 ? 3 : 1.9));
    opt.load_moments(0, m.data(), v.data(), n);
    const std::vector<float> m1(opt.read_moments(0, 0, n), opt.read_moments(0, 0, n) + n);
    const std::vector<float> v1(opt.read_moments(1, 0, n), opt.read_moments(1, 0, n) + n);
    double err = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      err += std::fabs(m1[size_t(i)] - m[size_t(i)]);
      mag += std::fabs(m[size_t(i)]);
      if (i >= big && state == StateDType::kInt8) {  // the small range stays fp32
        ASSERT_EQ(m1[size_t(i)], m[size_t(i)]) << i;
        ASSERT_EQ(v1[size_t(i)], v[size_t(i)]) << i;
      }
    }
    EXPECT_LT(err / mag, state == StateDType::kInt8 ? 0.02 : 0.004);
    // Loading what was read is the identity on the stored state.
    AdamW again(ranges, n, AdamWSettings{}, o);
    again.load_moments(0, m1.data(), v1.data(), n);
    for (int which = 0; which < 2; ++which) {
      const std::vector<float>& want = which == 0 ? m1 : v1;
      const float* got = again.read_moments(which, 0, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[size_t(i)]) << which << " " << i;
    }
    // Loading in chunks that end on block boundaries gives the same state as one load.
    AdamW chunked(ranges, n, AdamWSettings{}, o);
    for (int64_t at = 0, next; at < n; at = next) {
      next = AdamW::state_chunk_end(at, 1000 + at, n, 1024);
      chunked.load_moments(at, m1.data() + at, v1.data() + at, next - at);
    }
    const float* got = chunked.read_moments(0, 0, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], m1[size_t(i)]) << i;
  }
}

}  // namespace
}  // namespace tt
