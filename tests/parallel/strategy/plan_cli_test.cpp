// `topotrain plan` end to end: the table, the pick, the reason, JSON for scripts, usage errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace tt::test {
namespace {

std::string config_args() {
  return "--config " + source_dir() + "/examples/gpt2-124m.pbtxt --set train.batch_size=16 --set train.seq_len=1024";
}

TEST(PlanCli, PrintsCandidatesPickReasonAndNcclHints) {
  const CommandResult r = run_topotrain("plan " + config_args() + " --preset 8x4090-pcie");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bucket payload"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\n*"), std::string::npos) << r.output;  // the pick is marked
  EXPECT_NE(r.output.find("pick: 25MB bf16 ring all_reduce zero0"), std::string::npos) << r.output;
  // Every field that selects the pick, the bucket cap in the config's MiB (25 MB = 23.8419 MiB).
  EXPECT_NE(r.output.find("--set parallel.zero_stage=0 --set parallel.bucket_cap_mb=23.8419 --set "
                          "parallel.grad_compression=bf16 --set parallel.collective=flat"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("reason: bf16: PCIe via host (no P2P)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NCCL_P2P_DISABLE=1"), std::string::npos) << r.output;
}

TEST(PlanCli, JsonAndGpuRestriction) {
  const CommandResult r = run_topotrain("plan " + config_args() + " --preset 2x8x4090-pcie-1gbe --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["ranks"], 16);
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["pick"]["payload"], "int8+ef");
  EXPECT_NE(j["reason"].get<std::string>().find("1 GbE"), std::string::npos);
  // 4 bucket caps x (ZeRO-0: fp32 ring/tree/hierarchical, bf16, int8 and fp8 ring/hierarchical;
  // ZeRO-1, ZeRO-2 fp32 ring), and ZeRO-3 (no cap) fp32 ring and hierarchical; each with fp32, bf16
  // and int8 optimizer state (GPT-2 fits on a 4090 without recompute: no recompute candidates).
  EXPECT_EQ(j["candidates"].size(), 3 * (4u * (3 + 2 + 2 + 2 + 1 + 1) + 2));
  EXPECT_EQ(j["pick"]["state_dtype"], "fp32");
  EXPECT_EQ(j["pick"]["recompute"], "none");
  for (const auto& c : j["candidates"]) {
    // Everything runs in `train` but hierarchical ZeRO-3 (priced for comparison).
    EXPECT_EQ(c["runnable"], c["zero_stage"].get<int>() <= 2 || c["shape"] != "hierarchical") << c.dump();
    if (c["payload"] != "fp32") EXPECT_EQ(c["zero_stage"], 0) << c.dump();
  }

  const CommandResult eight = run_topotrain("plan " + config_args() + " --preset 2x8x4090-pcie-1gbe --gpus 8 --json");
  ASSERT_EQ(eight.exit_code, 0) << eight.output;
  const auto j8 = nlohmann::json::parse(eight.output);
  EXPECT_EQ(j8["nodes"], 1);  // eight GPUs stay on one node: the 1 GbE link is out of the picture
  EXPECT_NE(j8["pick"]["payload"], "int8+ef");
}

// Llama-2-7B from its example config: the description the trainer builds (6.74B parameters), and a
// strategy-auto config is planned with the fields it forces, as `train` would run it.
TEST(PlanCli, Llama7bFromItsConfig) {
  const std::string llama = "--config " + source_dir() + "/examples/llama-7b.pbtxt";
  CommandResult r = run_topotrain("plan " + llama + " --preset 8xa100-sxm --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["params"], 6738415616);
  EXPECT_NE(j["model"].get<std::string>().find("llama L=32 H=32 KV=32 hd=128 C=4096"), std::string::npos) << j["model"];
  r = run_topotrain("plan " + llama + " --set parallel.strategy=auto --preset 8xa100-sxm --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["pick"]["zero_stage"], 3) << "the config forces zero_stage 3";
}

// Llama-2-7B on 8 x 4090 at T=4096: the pick recomputes blocks and prints its memory by consumer; on
// one 4090 nothing fits, and `plan` says what would, with exit code 5.
TEST(PlanCli, Llama7bMemoryLeversAndNothingFits) {
  const std::string llama = "plan --config " + source_dir() + "/examples/llama-7b.pbtxt --preset 8x4090-pcie";
  const CommandResult r = run_topotrain(llama);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--set train.recompute=full --set train.recompute_blocks="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory per GPU: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("activations "), std::string::npos) << r.output;
  const CommandResult one = run_topotrain(llama + " --gpus 1");
  EXPECT_EQ(one.exit_code, 5) << one.output;
  EXPECT_NE(one.output.find("pick: none fits"), std::string::npos) << one.output;
  EXPECT_NE(one.output.find("it fits on GPUs with >="), std::string::npos) << one.output;
}

TEST(PlanCli, UsageErrors) {
  EXPECT_EQ(run_topotrain("plan " + config_args()).exit_code, 2);  // no topology
  EXPECT_EQ(run_topotrain("plan " + config_args() + " --preset 8xh100-sxm --topology x.pbtxt").exit_code, 2);
  const CommandResult bad = run_topotrain("plan " + config_args() + " --preset 9xfoo");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("unknown topology preset"), std::string::npos) << bad.output;
  EXPECT_EQ(run_topotrain("plan " + config_args() + " --preset 8xh100-sxm --gpus 9").exit_code, 2);
}

}  // namespace
}  // namespace tt::test
