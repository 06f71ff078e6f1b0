// The precision parity check behind `topotrain compare`, on records built here: final-loss and
// worst-window gaps against the tolerances, the skipped early steps, the fp8 trend flags, and the
// errors that name the run.
#include "launch/precision_parity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"

namespace tt {
namespace {

// A run of `steps` steps whose train loss is loss(step) and whose validation loss at the last step
// is val (none when NaN).
RunCurve run(const std::string& name, int steps, const std::function<double(int)>& loss, double val = NAN) {
  RunCurve c{name, {}};
  for (int s = 1; s <= steps; ++s) {
    MetricsRecord r;
    r.step = s;
    r.values["loss"] = loss(s);
    if (s == steps && std::isfinite(val)) r.values["val_loss"] = val;
    c.records.push_back(r);
  }
  return c;
}

double decay(int s) { return 2.0 + 3.0 * std::exp(-s / 40.0); }

TEST(PrecisionParity, IdenticalRunsPassWithZeroGaps) {
  const auto res = compare_runs({run("base", 200, decay, 2.1), run("same", 200, decay, 2.1)}, ParityOptions{});
  ASSERT_EQ(res.size(), 2u);
  EXPECT_TRUE(res[0].pass);
  EXPECT_TRUE(res[1].pass);
  EXPECT_TRUE(res[1].final_is_val);
  EXPECT_EQ(res[1].final_gap, 0.0);
  EXPECT_EQ(res[1].worst_window_gap, 0.0);
}

TEST(PrecisionParity, FinalValidationLossGapIsJudgedAgainstTheTolerance) {
  ParityOptions o;  // 1.5%
  auto within = compare_runs({run("base", 200, decay, 2.0), run("ok", 200, decay, 2.0 * 1.014)}, o);
  EXPECT_TRUE(within[1].pass);
  EXPECT_NEAR(within[1].final_gap, 0.014, 1e-12);
  auto beyond = compare_runs({run("base", 200, decay, 2.0), run("bad", 200, decay, 2.0 * 0.984)}, o);
  EXPECT_FALSE(beyond[1].pass) << "a gap is judged by its size, better or worse";
  EXPECT_NEAR(beyond[1].final_gap, -0.016, 1e-12);
}

TEST(PrecisionParity, WithoutValidationTheLastWindowsMeanTrainLossIsCompared) {
  ParityOptions o;
  o.window = 50;
  auto res = compare_runs({run("base", 200, [](int) { return 2.0; }),
                           run("run", 200, [](int s) { return s > 150 ? 2.1 : 2.0; })},
                          o);
  EXPECT_FALSE(res[1].final_is_val);
  EXPECT_NEAR(res[1].final_loss, 2.1, 1e-12);
  EXPECT_NEAR(res[1].final_gap, 0.05, 1e-12);
  EXPECT_FALSE(res[1].pass);
}

TEST(PrecisionParity, WorstWindowIsFoundAndEarlyStepsAreSkipped) {
  ParityOptions o;
  o.window = 20;
  o.skip = 0.1;  // steps 1..20 of 200 are left out
  // A large gap in the first window (skipped) and a bump of 8% over steps 101..120 (reported).
  auto bumpy = [](int s) { return decay(s) * (s <= 20 ? 1.5 : (s > 100 && s <= 120) ? 1.08 : 1.0); };
  auto res = compare_runs({run("base", 200, decay, 2.1), run("bumpy", 200, bumpy, 2.1)}, o);
  EXPECT_EQ(res[1].worst_window_end, 120);
  EXPECT_NEAR(res[1].worst_window_gap, 0.08, 1e-9);
  EXPECT_EQ(res[1].final_gap, 0.0);
  EXPECT_FALSE(res[1].pass) << "8% beyond the 5% window tolerance";
  o.window_tolerance = 0.1;
  EXPECT_TRUE(compare_runs({run("base", 200, decay, 2.1), run("bumpy", 200, bumpy, 2.1)}, o)[1].pass);
}

TEST(PrecisionParity, GrowingAmaxAndRisingSaturationAreFlagged) {
  ParityOptions o;  // growth 2x, skip 0.1
  RunCurve steady = run("steady", 200, decay), growing = run("growing", 200, decay);
  for (MetricsRecord& r : steady.records) {
    r.values["fp8_amax_dy"] = 1e-3 * (1 + 0.5 * std::sin(r.step));  // noisy but flat
    r.values["fp8_overflow_x"] = r.step % 7 == 0 ? 1 : 0;
  }
  for (MetricsRecord& r : growing.records) {
    r.values["fp8_amax_x"] = 4.0 * std::exp(r.step / 60.0);  // ~exp(2.4) from the first quarter to the last
    r.values["fp8_overflow_w"] = r.step > 160 ? 3 : 0;
  }
  EXPECT_TRUE(fp8_trend_flags(steady.records, o).empty());
  const auto flags = fp8_trend_flags(growing.records, o);
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_NE(flags[0].find("fp8_amax_x grew"), std::string::npos) << flags[0];
  EXPECT_NE(flags[1].find("fp8_overflow_w"), std::string::npos) << flags[1];
  // Flags are reported but judged by a person: the loss decides pass/fail.
  const auto res = compare_runs({steady, growing}, o);
  EXPECT_EQ(res[1].flags, flags);
  EXPECT_TRUE(res[1].pass);
  EXPECT_TRUE(fp8_trend_flags(run("plain", 200, decay).records, o).empty()) << "no fp8 statistics, no flags";
}

TEST(PrecisionParity, RunsWithoutLossOrOverlapNameTheRun) {
  RunCurve empty{"runs/empty", {}};
  MetricsRecord r;
  r.step = 1;
  r.values["lr"] = 1e-3;
  empty.records.push_back(r);
  try {
    compare_runs({run("runs/base", 100, decay), empty}, ParityOptions{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs/empty/metrics.jsonl"), std::string::npos) << e.what();
  }
  // Steps 1..40 against 101..140: nothing in common.
  RunCurve late = run("runs/late", 140, decay);
  late.records.erase(late.records.begin(), late.records.begin() + 100);
  try {
    compare_runs({run("runs/base", 40, decay), late}, ParityOptions{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs/late"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tt
