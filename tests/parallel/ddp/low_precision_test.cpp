// fp8 and int8 matmul precision end to end through `topotrain train` (the CPU's exact emulation),
// for GPT-2 and a Llama:
//  * N ranks equal one rank with N accumulation steps: the fp8 scales are the same (amax is reduced
//    over the ranks, so rank 0's scales come from both ranks' data, as one rank's from both micro-
//    steps), and the losses agree up to the summation order's effect on quantised codes;
//  * recompute changes nothing (the scales are fixed within a step, the codes are re-made equal);
//  * a resumed fp8 run continues bit for bit (scaling state in the checkpoint);
//  * config mistakes are named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/checkpoint_io.h"
#include "tests/parallel/ddp/tiny_train.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Case {
  const char* arch;
  const char* precision;
};
std::string label(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.arch) + "_" + info.param.precision;
}

class LowPrecisionTrain : public test::TinyTrainTest, public ::testing::WithParamInterface<Case> {
 protected:
  test::CommandResult train(int ranks, const std::string& run_dir, const std::string& extra) {
    const std::string args = test::tiny_train_args(
        dir_, run_dir, 6, std::string("--set train.matmul_precision=") + GetParam().precision + " " + extra,
        GetParam().arch);
    if (ranks == 1) return test::run_topotrain(args);
    return test::run_command(std::string(TT_MPIRUN) + " -np " + std::to_string(ranks) + " " + TT_BINARY + " " + args);
  }
  bool fp8() const { return std::string(GetParam().precision) == "fp8"; }
  // step -> the metrics.jsonl record.
  std::map<int, json> records(const std::string& run_dir) {
    std::map<int, json> out;
    std::istringstream in(test::read_file(dir_.file(run_dir + "/metrics.jsonl")));
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      if (j.contains("step") && j.contains("loss")) out[j.at("step").get<int>()] = j;
    }
    return out;
  }
};

INSTANTIATE_TEST_SUITE_P(Modes, LowPrecisionTrain,
                         ::testing::Values(Case{"gpt2", "fp8"}, Case{"gpt2", "int8"}, Case{"llama", "fp8"},
                                           Case{"llama", "int8"}),
                         label);

TEST_P(LowPrecisionTrain, NRanksEqualOneRankWithNAccumulationSteps) {
  auto single = train(1, "single", "--set train.grad_accum_steps=2");
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const auto want = records("single");
  ASSERT_EQ(want.size(), 12u);
  for (int stage : {0, 3}) {
    const std::string run = "dp_z" + std::to_string(stage);
    auto r = train(2, run, "--set parallel.zero_stage=" + std::to_string(stage));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto got = records(run);
    ASSERT_EQ(got.size(), want.size()) << run;
    // Measured: fp8 identical for the first steps, then within 4e-4 (a summation-order difference
    // in a weight can move it across a code boundary); int8 within 1e-4. A run whose ranks chose
    // their own scales, or skipped the averaging, is off by far more from the second step on.
    const double tol = fp8() ? 2e-3 : 5e-4;
    for (const auto& [step, rec] : want) {
      const double x = rec.at("loss").get<double>(), y = got.at(step).at("loss").get<double>();
      EXPECT_LE(std::fabs(x - y), tol * x) << run << " step " << step << ": " << x << " vs " << y;
      if (!fp8()) continue;
      for (const char* field : {"fp8_scale_block_0_qkv_x", "fp8_scale_block_0_qkv_w", "fp8_scale_block_0_qkv_dy"}) {
        ASSERT_TRUE(rec.contains(field)) << field;
        const double a = rec.at(field).get<double>(), b = got.at(step).at(field).get<double>();
        // Later, a step's absmax (an outlier) follows the trajectory's small differences.
        if (step <= 3)
          EXPECT_EQ(a, b) << run << " step " << step << " " << field << ": the ranks' scales come from both ranks";
      }
    }
  }
}

TEST_P(LowPrecisionTrain, RecomputeTrainsBitIdentically) {
  auto keep = train(1, "keep", "--set train.grad_accum_steps=2");
  ASSERT_EQ(keep.exit_code, 0) << keep.output;
  const auto want = records("keep");
  for (const char* mode : {"selective", "full"}) {
    const std::string run = std::string("rc_") + mode;
    auto r = train(1, run, std::string("--set train.grad_accum_steps=2 --set train.recompute=") + mode);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto got = records(run);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [step, rec] : want) {
      EXPECT_EQ(got.at(step).at("loss"), rec.at("loss")) << run << " step " << step;
      if (fp8()) EXPECT_EQ(got.at(step).at("fp8_amax_dy"), rec.at("fp8_amax_dy")) << run << " step " << step;
    }
  }
}

TEST_P(LowPrecisionTrain, ResumesBitExactlyWithItsScalingState) {
  const std::string common = "--set checkpoint.every=6 --set parallel.zero_stage=1";
  auto full = train(2, "full", common);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto uninterrupted = records("full");
  const std::string ckpt = checkpoint_path(dir_.file("full/checkpoints"), 6);
  if (fp8()) {
    CheckpointReader r(ckpt);
    EXPECT_TRUE(r.has("fp8_scaling")) << "the scaling state is checkpointed";
    EXPECT_NE(r.string("fp8_scaling_layout").find("history=1024"), std::string::npos);
  }
  fs::create_directories(dir_.file("resumed/checkpoints"));
  fs::copy_file(ckpt, checkpoint_path(dir_.file("resumed/checkpoints"), 6));
  auto resumed = train(2, "resumed", common + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto got = records("resumed");
  ASSERT_EQ(got.size(), 6u);
  for (const auto& [step, rec] : got) {
    EXPECT_EQ(rec.at("loss"), uninterrupted.at(step).at("loss")) << "step " << step;
    if (fp8())
      for (const char* field : {"fp8_scale_block_1_down_w", "fp8_amax_dy", "fp8_underflow_dy"})
        EXPECT_EQ(rec.at(field), uninterrupted.at(step).at(field)) << field << " step " << step;
  }
}

// A config that asks for what cannot be is a config error (exit 2) naming the field.
TEST(LowPrecisionConfig, MistakesNameTheField) {
  test::TempDir dir;
  const std::string base = "train --config " + test::source_dir() + "/examples/gpt2-tiny-synth.pbtxt --set logging.run_dir=" +
                           dir.file("run") + " ";
  const std::pair<const char*, const char*> cases[] = {
      {"--set train.matmul_precision=fp4", "train.matmul_precision \"fp4\" is not supported"},
      {"--set train.matmul_precision=auto", "set parallel.strategy \"auto\" too"},
      {"--set train.low_precision_lm_head=true", "train.low_precision_lm_head needs a low train.matmul_precision"},
      {"--set train.matmul_precision=fp8 --set train.fp8.amax_history_len=0", "train.fp8.amax_history_len"},
  };
  for (const auto& [args, message] : cases) {
    auto r = test::run_topotrain(base + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace tt
