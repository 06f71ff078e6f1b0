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
  EXPECT_NEAR(opt.m().data<float>()[0], 0.1 * 0.2, 1e-7);
  EXPECT_NEAR(opt.v().data<float>()[2], 0.05 * 0.01, 1e-9);
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
  EXPECT_EQ(opt.m().data<float>()[3], 0.25f);
  EXPECT_EQ(opt.v().data<float>()[3], 0.5f);
  EXPECT_EQ(opt.v().data<float>()[0], 0.0f);
}

}  // namespace
}  // namespace tt
