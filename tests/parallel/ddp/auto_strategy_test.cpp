// parallel.strategy "auto" under mpirun: the planner's pick is applied and logged with its reason,
// and a field forced in the config (or with --set) wins over the pick, ZeRO-3 included.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/test_util.h"

namespace tt {
namespace {

TEST(AutoStrategy, PlannerPickIsAppliedAndForcedFieldsWin) {
  test::TempDir dir;
  auto synth =
      test::run_topotrain("data synth --out " + dir.file("data") +
                          " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 100000 --val-tokens 20000");
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  const std::string base =
      "mpirun --allow-run-as-root --oversubscribe -np 2 " + std::string(TT_BINARY) + " train --config " +
      test::source_dir() + "/examples/gpt2-tiny-synth.pbtxt" + " --set data.train=" + dir.file("data/train.bin") +
      " --set data.val=" + dir.file("data/val.bin") + " --set model.vocab_size=16 --set train.steps=4" +
      " --set optimizer.warmup_steps=1 --set parallel.strategy=auto";

  auto picked = test::run_command(base + " --set logging.run_dir=" + dir.file("auto"));
  ASSERT_EQ(picked.exit_code, 0) << picked.output;
  std::smatch pick, applied;
  ASSERT_TRUE(std::regex_search(picked.output, pick,
                                std::regex("strategy auto: \\S+ (fp32|bf16|int8\\+ef|fp8\\+ef) ring \\S+ zero([012])")))
      << picked.output;
  ASSERT_TRUE(std::regex_search(picked.output, applied, std::regex("zero_stage ([012]) \\| gradients (\\w+)")))
      << picked.output;
  EXPECT_EQ(pick[2], applied[1]) << "the trainer must run the planner's ZeRO stage";
  const std::string payload = pick[1] == "fp32" ? "none" : pick[1] == "bf16" ? "bf16" : pick[1] == "int8+ef" ? "int8" : "fp8";
  EXPECT_EQ(applied[2], payload) << "the trainer must run the planner's payload";

  auto forced =
      test::run_command(base + " --set logging.run_dir=" + dir.file("forced") + " --set parallel.zero_stage=2");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_NE(forced.output.find("zero_stage 2 | gradients none"), std::string::npos) << forced.output;
  // ZeRO-3 is a memory fallback the planner never picks while a lower stage fits; forced, it runs.
  auto zero3 = test::run_command(base + " --set logging.run_dir=" + dir.file("zero3") + " --set parallel.zero_stage=3");
  ASSERT_EQ(zero3.exit_code, 0) << zero3.output;
  EXPECT_NE(zero3.output.find("zero_stage 3 (parameters gathered per layer) | gradients none"), std::string::npos)
      << zero3.output;

  // train.matmul_precision "auto": the planner prices each precision the ranks' device has; CPU
  // ranks have only the default (they emulate fp8/int8 exactly, not faster), which the run keeps.
  auto precision =
      test::run_command(base + " --set logging.run_dir=" + dir.file("precision") + " --set train.matmul_precision=auto");
  ASSERT_EQ(precision.exit_code, 0) << precision.output;
  EXPECT_NE(precision.output.find("strategy auto: matmul precision: default"), std::string::npos) << precision.output;
  EXPECT_NE(precision.output.find("int8 not available on cpu"), std::string::npos) << precision.output;
  EXPECT_NE(test::read_file(dir.file("precision/config.pbtxt")).find("matmul_precision: \"default\""),
            std::string::npos);
  // One rank: no communication to plan, the precision is still resolved.
  auto alone = test::run_topotrain(base.substr(base.find(" train ") + 1) + " --set logging.run_dir=" +
                                   dir.file("alone") + " --set train.matmul_precision=auto");
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_NE(alone.output.find("strategy auto: matmul precision default (CPU ranks"), std::string::npos) << alone.output;
}

}  // namespace
}  // namespace tt
