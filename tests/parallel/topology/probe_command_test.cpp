// `topotrain probe` end to end: presets as JSON and tables, --dump/--topology round trip, the probe
// on this machine, and usage errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace tt::test {
namespace {

TEST(ProbeCommand, PresetAsJsonParses) {
  const CommandResult r = run_topotrain("probe --preset 8xh100-sxm --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["name"], "8xh100-sxm");
  EXPECT_EQ(j["source"], "preset");
  EXPECT_EQ(j["nodes"].size(), 1u);
  EXPECT_EQ(j["nodes"][0]["gpus"].size(), 8u);
  EXPECT_EQ(j["links"].size(), 28u);
  EXPECT_EQ(j["links"][0]["kind"], "LINK_NVLINK");
  EXPECT_DOUBLE_EQ(j["intra_node_busbw_gbps"].get<double>(), 400);
  EXPECT_EQ(j["p2p_all_verified"], true);
}

TEST(ProbeCommand, ListPresetsAndTable) {
  CommandResult r = run_topotrain("probe --list-presets");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2x8x4090-pcie-1gbe\n"), std::string::npos);
  r = run_topotrain("probe --preset 8x4090-pcie");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("NCCL_P2P_DISABLE=1 recommended"), std::string::npos) << r.output;
}

TEST(ProbeCommand, DumpThenLoad) {
  TempDir dir;
  CommandResult r = run_topotrain("probe --preset 2x8xa100-sxm-100g-ib --dump " + dir.file("t.pbtxt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(read_file(dir.file("t.pbtxt")).find("name: \"2x8xa100-sxm-100g-ib\""), std::string::npos);
  r = run_topotrain("probe --topology " + dir.file("t.pbtxt") + " --json --dump " + dir.file("t.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["source"], "file:" + dir.file("t.pbtxt"));
  EXPECT_EQ(j["nodes"].size(), 2u);
  r = run_topotrain("probe --topology " + dir.file("t.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("network node 0 <-> node 1: 12.5 GB/s"), std::string::npos) << r.output;
}

TEST(ProbeCommand, ProbesThisMachine) {
  TempDir dir;
  const CommandResult r = run_topotrain("probe --json --sizes 4K,64K --iters 2 --dump " + dir.file("p.pbtxt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["source"], "probe");
  EXPECT_EQ(j["nodes"].size(), 1u);
  EXPECT_EQ(j["measurements"].size(), 6u);  // 2 sizes x all_reduce, reduce_scatter, all_gather
  EXPECT_EQ(run_topotrain("probe --topology " + dir.file("p.pbtxt")).exit_code, 0);
}

TEST(ProbeCommand, UsageAndConfigErrors) {
  CommandResult r = run_topotrain("probe --preset nope");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("8xh100-sxm"), std::string::npos);
  r = run_topotrain("probe --preset 8xh100-sxm --topology x.pbtxt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_topotrain("probe --sizes 12Q");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_topotrain("probe --topology /nonexistent/t.pbtxt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/t.pbtxt"), std::string::npos);
}

}  // namespace
}  // namespace tt::test
