// The scaling simulator: rows per GPU count and strategy family, weak-scaling arithmetic, and the
// `topotrain simulate` command's CSV and PNG.
#include "parallel/sim/scaling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "parallel/topology/presets.h"
#include "tests/test_util.h"

namespace tt::sim {
namespace {

TEST(Scaling, RowsPerGpuCountAndFamily) {
  const auto model = strategy::preset_model_spec("gpt2-124m", 16384);
  const ScalingResult r = simulate_scaling(topology::preset_topology("8xh100-sxm"), model, {1, 8, 16}, {});
  const auto& fams = scaling_families();
  ASSERT_EQ(r.rows.size(), 3 * fams.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const ScalingRow& row = r.rows[i];
    EXPECT_EQ(row.family, fams[i % fams.size()]);
    EXPECT_DOUBLE_EQ(row.ideal_tokens_per_s, row.gpus * r.single_gpu_tokens_per_s);
    if (row.family == "hierarchical") {
      EXPECT_EQ(row.available, row.gpus > 8) << row.gpus;  // only with a second node
      continue;
    }
    ASSERT_TRUE(row.available) << row.family << " " << row.gpus;
    EXPECT_NEAR(row.tokens_per_s, row.gpus * 16384.0 / row.step_s, 1e-6 * row.tokens_per_s);
    EXPECT_GT(row.efficiency, row.gpus <= 8 ? 0.8 : 0.2) << row.family << " " << row.gpus;  // NVLink vs 100 Gb/s
    if (row.gpus == 1) EXPECT_NEAR(row.efficiency, 1.0, 1e-12);
  }
  // 16 GPUs on one-node H100s are extrapolated over an assumed network, and the result says so.
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("100 Gb/s"), std::string::npos);
  // CSV: header + one line per row.
  const std::string csv = scaling_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), long(r.rows.size() + 1));
}

TEST(Scaling, SlowNetworkCostsEfficiencyAndInt8RecoversSome) {
  const auto model = strategy::preset_model_spec("gpt2-124m", 16384);
  const ScalingResult r = simulate_scaling(topology::preset_topology("2x8x4090-pcie-1gbe"), model, {16}, {});
  double fp32 = NAN, int8 = NAN;
  for (const auto& row : r.rows) {
    if (row.family == "flat fp32") fp32 = row.efficiency;
    if (row.family == "int8+ef") int8 = row.efficiency;
  }
  EXPECT_LT(fp32, 0.1);
  EXPECT_GT(int8, 2 * fp32);
}

TEST(Scaling, PlotDrawsOnlyFamiliesWithPoints) {
  // One node: no hierarchical candidate at any size, so no hierarchical line (gnuplot would warn
  // "Skipping data file with no valid points"); two nodes: it is drawn.
  const auto model = strategy::preset_model_spec("gpt2-124m", 16384);
  const std::string one_node = scaling_gnuplot_script(
      simulate_scaling(topology::preset_topology("8xh100-sxm"), model, {2, 8}, {}), "d", "p.png");
  EXPECT_EQ(one_node.find("title 'hierarchical'"), std::string::npos) << one_node;
  EXPECT_NE(one_node.find("title 'flat fp32'"), std::string::npos) << one_node;
  const std::string two_nodes = scaling_gnuplot_script(
      simulate_scaling(topology::preset_topology("2x8x4090-pcie-1gbe"), model, {8, 16}, {}), "d", "p.png");
  EXPECT_NE(two_nodes.find("title 'hierarchical'"), std::string::npos) << two_nodes;
}

TEST(SimulateCli, WritesCsvAndPng) {
  test::TempDir dir;
  const test::CommandResult r =
      test::run_topotrain("simulate --model gpt2-124m --preset 8x4090-pcie --gpus 1,2,4,8,16 --out " + dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("flat fp32"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Skipping data file"), std::string::npos) << r.output;  // gnuplot's warning
  std::ifstream csv(dir.file("scaling.csv"));
  ASSERT_TRUE(csv.good());
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("gpus,strategy,available,plan,step_s,tokens_per_s", 0), 0u) << line;
  int rows = 0, picks = 0;
  while (std::getline(csv, line)) {
    ++rows;
    if (line.find(",pick,1,") != std::string::npos) ++picks;
  }
  EXPECT_EQ(rows, 5 * 5);  // 5 GPU counts x 5 families
  EXPECT_EQ(picks, 5);     // the planner's pick exists at every size

  if (test::run_command("command -v gnuplot").exit_code != 0)
    GTEST_SKIP() << "gnuplot not installed: scaling.png not checked (apt-get install gnuplot-nox)";
  std::ifstream png(dir.file("scaling.png"), std::ios::binary);
  ASSERT_TRUE(png.good()) << r.output;
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
}

// The model of a run config, as the trainer builds it: Llama-2-7B's example prices as the llama2-7b
// preset does at the same tokens per GPU.
TEST(SimulateCli, ModelFromAConfigEqualsItsPreset) {
  const std::string args = " --preset 8xa100-sxm --gpus 8,16 --tokens-per-gpu 65536";
  const test::CommandResult from_config =
      test::run_topotrain("simulate --config " + test::source_dir() + "/examples/llama-7b.pbtxt" + args);
  ASSERT_EQ(from_config.exit_code, 0) << from_config.output;
  const test::CommandResult preset = test::run_topotrain("simulate --model llama2-7b" + args);
  ASSERT_EQ(preset.exit_code, 0) << preset.output;
  auto table = [](const std::string& out) { return out.substr(out.find('\n')); };  // past the title line
  EXPECT_EQ(table(from_config.output), table(preset.output));
}

TEST(SimulateCli, UsageErrors) {
  EXPECT_EQ(test::run_topotrain("simulate --model gpt2-124m --preset 8x4090-pcie --gpus 4,2").exit_code, 2);
  EXPECT_EQ(test::run_topotrain("simulate --model gpt2-124m --config x.pbtxt --preset 8x4090-pcie").exit_code, 2);
  EXPECT_EQ(test::run_topotrain("simulate --model gpt5 --preset 8x4090-pcie").exit_code, 2);
  EXPECT_EQ(test::run_topotrain("simulate --model gpt2-124m").exit_code, 2);
}

}  // namespace
}  // namespace tt::sim
