// Tests for kernels/adamw against values computed by hand (in double, from the update rule in
// adamw.h): one and two steps, with and without weight decay, and grad_scale.
#include "kernels/adamw/adamw.h"

#include <gtest/gtest.h>

#include <vector>

namespace tt::test {
namespace {

using kernels::adamw_update_cpu;
using kernels::AdamWHyper;

// Two elements: param {1, -2}; step-1 grads {0.5, 3}, step-2 grads {-0.25, 1}.
struct Expected {
  double p1[2], p2[2];
};

void run_two_steps(float weight_decay, const Expected& e) {
  std::vector<float> p = {1.0f, -2.0f}, m = {0, 0}, v = {0, 0};
  AdamWHyper h{0.1f, 0.9f, 0.999f, 1e-8f, weight_decay, 1};
  const std::vector<float> g1 = {0.5f, 3.0f}, g2 = {-0.25f, 1.0f};
  adamw_update_cpu(p.data(), m.data(), v.data(), g1.data(), 2, h, 1.0f);
  EXPECT_NEAR(p[0], e.p1[0], 1e-6);
  EXPECT_NEAR(p[1], e.p1[1], 1e-6);
  EXPECT_NEAR(m[0], 0.05, 1e-6 * 0.05);
  EXPECT_NEAR(v[0], 0.00025, 2e-5 * 0.00025);  // 1-beta2 is 1.3e-5 off in fp32
  EXPECT_NEAR(m[1], 0.3, 1e-6 * 0.3);
  EXPECT_NEAR(v[1], 0.009, 2e-5 * 0.009);  // 1-beta2 is 1.3e-5 off in fp32
  h.step = 2;
  adamw_update_cpu(p.data(), m.data(), v.data(), g2.data(), 2, h, 1.0f);
  EXPECT_NEAR(p[0], e.p2[0], 2e-6);
  EXPECT_NEAR(p[1], e.p2[1], 2e-6);
  EXPECT_NEAR(m[0], 0.02, 1e-6 * 0.02);
  EXPECT_NEAR(v[0], 0.00031225, 2e-5 * 0.00031225);  // 1-beta2 is 1.3e-5 off in fp32
  EXPECT_NEAR(m[1], 0.37, 1e-6 * 0.37);
  EXPECT_NEAR(v[1], 0.009991, 2e-5 * 0.009991);  // 1-beta2 is 1.3e-5 off in fp32
}

TEST(AdamW, TwoStepsWithoutWeightDecay) {
  run_two_steps(0.0f, {{0.900000002, -2.0999999996666667}, {0.8733662987078463, -2.187106394349471}});
}

TEST(AdamW, TwoStepsWithWeightDecay) {
  // Decoupled: the decay term lr·wd·param is added to the Adam step, not folded into the gradient.
  run_two_steps(0.1f, {{0.890000002, -2.0799999996666667}, {0.8544662986878464, -2.146306394352804}});
}

TEST(AdamW, GradScaleIsAppliedBeforeTheMoments) {
  // eps = 0.1 makes the step depend on the gradient's magnitude, not only its sign.
  AdamWHyper h{0.1f, 0.9f, 0.999f, 0.1f, 0.0f, 1};
  std::vector<float> p = {1.0f}, m = {0}, v = {0};
  const std::vector<float> g = {2.0f};
  adamw_update_cpu(p.data(), m.data(), v.data(), g.data(), 1, h, 0.25f);
  EXPECT_NEAR(p[0], 0.9166666666666666, 1e-6);
  EXPECT_NEAR(m[0], 0.05, 1e-6 * 0.05);
  EXPECT_NEAR(v[0], 0.00025, 2e-5 * 0.00025);  // 1-beta2 is 1.3e-5 off in fp32
  std::vector<float> p2 = {1.0f}, m2 = {0}, v2 = {0};
  adamw_update_cpu(p2.data(), m2.data(), v2.data(), g.data(), 1, h, 1.0f);
  EXPECT_NEAR(p2[0], 0.9047619047619048, 1e-6);
  EXPECT_NEAR(m2[0], 0.2, 1e-6 * 0.2);
  EXPECT_NEAR(v2[0], 0.004, 2e-5 * 0.004);  // 1-beta2 is 1.3e-5 off in fp32
}

}  // namespace
}  // namespace tt::test
