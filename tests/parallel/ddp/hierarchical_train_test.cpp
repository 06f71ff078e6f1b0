// parallel.collective "hierarchical" end to end through `mpirun ... topotrain train`, on pretended
// nodes (parallel.ranks_per_node): the loss trajectory matches the flat all-reduce's up to float
// summation order, compressed payloads train alongside it, bucket communication still overlaps
// backward, and strategy "auto" on a pretended two-node cluster can run the hierarchical pick.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <string>

#include "tests/parallel/ddp/tiny_train.h"
#include "tests/test_util.h"

namespace tt {
namespace {

class HierarchicalTrain : public test::TinyTrainTest {
 protected:
  test::CommandResult train(int ranks, const std::string& run_dir, const std::string& extra) {
    return test::run_command(std::string(TT_MPIRUN) + " -np " + std::to_string(ranks) + " " + TT_BINARY + " " +
                             test::tiny_train_args(dir_, run_dir, 0, extra));
  }
  std::map<int, test::StepMetrics> metrics(const std::string& run) {
    return test::read_step_metrics(dir_.file(run + "/metrics.jsonl"));
  }
};

// 4 ranks as 2 nodes x 2: the same averaged gradients as the flat all-reduce up to summation order.
TEST_F(HierarchicalTrain, MatchesFlatOnTwoPretendedNodes) {
  const std::string small_buckets = " --set parallel.bucket_cap_mb=0.05 --set parallel.first_bucket_cap_mb=0.01";
  auto flat = train(4, "flat", small_buckets);
  ASSERT_EQ(flat.exit_code, 0) << flat.output;
  auto hier =
      train(4, "hier", small_buckets + " --set parallel.collective=hierarchical --set parallel.ranks_per_node=2");
  ASSERT_EQ(hier.exit_code, 0) << hier.output;
  EXPECT_NE(hier.output.find("hierarchical over 2 nodes x 2 ranks"), std::string::npos) << hier.output;
  EXPECT_NE(hier.output.find("(mpi, 2 node(s))"), std::string::npos) << hier.output;
  const auto a = metrics("flat"), b = metrics("hier");
  ASSERT_EQ(a.size(), 12u);
  ASSERT_EQ(b.size(), a.size());
  for (const auto& [step, rec] : a)
    EXPECT_LE(std::fabs(rec.loss_value() - b.at(step).loss_value()), 2e-5 * rec.loss_value())
        << "step " << step << ": flat " << rec.loss_value() << " hierarchical " << b.at(step).loss_value();

  // Compressed payloads run hierarchically too and stay close to fp32 (int8 quantises three times
  // here; in these 12 warm-up steps flat int8 strays up to 1.4% from fp32, hierarchical int8 2.6%).
  auto int8 = train(4, "hier_int8",
                    small_buckets +
                        " --set parallel.collective=hierarchical --set parallel.ranks_per_node=2"
                        " --set parallel.grad_compression=int8");
  ASSERT_EQ(int8.exit_code, 0) << int8.output;
  const auto c = metrics("hier_int8");
  ASSERT_EQ(c.size(), a.size());
  for (const auto& [step, rec] : a)
    EXPECT_LE(std::fabs(rec.loss_value() - c.at(step).loss_value()), 4e-2 * rec.loss_value())
        << "step " << step << ": flat fp32 " << rec.loss_value() << " hierarchical int8 " << c.at(step).loss_value();
}

// Each collective holds a simulated slow link for 2 ms; the hierarchical stages of the 32-odd
// buckets are issued while backward still runs, so the step waits for far less than the total.
TEST_F(HierarchicalTrain, BucketCommunicationStillOverlapsBackward) {
  auto r = train(2, "overlap",
                 "--set model.n_layer=6 --set model.n_embd=128 --set train.batch_size=16 --set train.steps=8"
                 " --set parallel.inject_comm_delay_s=0.002 --set parallel.first_bucket_cap_mb=0.05"
                 " --set parallel.bucket_cap_mb=0.25 --set optimizer.warmup_steps=1"
                 " --set parallel.collective=hierarchical --set parallel.ranks_per_node=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  test::expect_comm_overlaps_backward(metrics("overlap"), r.output);
}

// strategy "auto" on 2 pretended nodes with the shape forced: the planner's hierarchical pick runs.
TEST_F(HierarchicalTrain, AutoStrategyRunsTheHierarchicalPick) {
  auto r = train(4, "auto",
                 "--set parallel.strategy=auto --set parallel.ranks_per_node=2 --set parallel.collective=hierarchical");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch pick;
  ASSERT_TRUE(std::regex_search(r.output, pick,
                                std::regex("strategy auto: \\S+ (fp32|bf16|int8\\+ef) hier all_reduce "
                                           "zero0")))
      << r.output;
  EXPECT_NE(r.output.find("hierarchical over 2 nodes x 2 ranks"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tt
