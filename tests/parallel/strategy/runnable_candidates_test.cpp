// Every candidate `topotrain plan` prints can be run by `topotrain train`, except hierarchical ZeRO-3
// (priced for comparison): its config settings pass the config validator
// and GradReducer accepts the resulting (zero_stage, grad_compression, collective, bucket cap). Also
// the validator's view of the collective fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/model/param_layout.h"
#include "core/tensor.h"
#include "parallel/comm/local/local_communicator.h"
#include "parallel/cost/collective_cost.h"
#include "parallel/ddp/reducer.h"
#include "parallel/strategy/planner.h"
#include "parallel/topology/presets.h"
#include "tests/test_util.h"

namespace tt::strategy {
namespace {

std::string tiny_config() { return test::source_dir() + "/examples/gpt2-tiny-synth.pbtxt"; }

TEST(RunnableCandidates, EveryCandidateButHierarchicalZero3RoundTripsThroughTheValidatorAndTheReducer) {
  const ModelDesc gpt = gpt2_desc(12, 12, 768, 50257, 1024);
  const ModelSpec model = model_spec(gpt, 1024, 16 * 1024);
  // A small layout for the reducer (bucket caps apply to it as they would to the model).
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 300000}, {300000, 310000}, {310000, 900000}};
  int hierarchical = 0, checked = 0, zero3 = 0;
  for (const std::string preset :
       {"8x4090-pcie", "8xh100-sxm", "2x8x4090-pcie-1gbe", "2x8xh100-sxm-1gbe", "2x8xh100-sxm-4x200g-ib"})
    for (bool gpus : {true, false}) {  // false: the same links between CPU ranks
      PlanOptions options;
      options.memory_budget_bytes = uint64_t(1) << 40;  // everything fits: judge runnability only
      cost::Cluster cluster = cost::cluster_of(topology::preset_topology(preset));
      cluster.has_gpus = gpus;
      const StrategyPlan plan = plan_strategy(cluster, model, options);
      for (const Candidate& c : plan.candidates) {
        const std::string what = preset + (gpus ? "" : " (CPU ranks)") + ": " + c.label();
        if (c.zero_stage == 3 && c.shape == cost::Algorithm::kHierarchical) {
          EXPECT_FALSE(c.runnable()) << what;
          EXPECT_TRUE(c.config_settings().empty()) << what;
          continue;
        }
        zero3 += c.zero_stage == 3;
        ASSERT_TRUE(c.runnable()) << what;
        EXPECT_TRUE(c.payload == cost::Payload::kFp32 || c.zero_stage == 0) << what << ": compressed ZeRO-1/2";
        EXPECT_TRUE(c.shape != cost::Algorithm::kHierarchical || c.zero_stage == 0)
            << what << ": hierarchical ZeRO-1/2";
        hierarchical += c.shape == cost::Algorithm::kHierarchical;
        const config::Config cfg = load_config(tiny_config(), c.config_settings());  // validates
        const auto& par = cfg.parallel();
        EXPECT_EQ(par.zero_stage(), c.zero_stage) << what;
        if (c.zero_stage == 3)  // one bucket per parameter group: the cap is not set
          EXPECT_EQ(par.bucket_cap_mb(), load_config(tiny_config(), {}).parallel().bucket_cap_mb()) << what;
        else
          EXPECT_NEAR(double(par.bucket_cap_mb()) * (1 << 20), c.bucket_mb * 1e6, 1e-4 * c.bucket_mb * 1e6) << what;
        EXPECT_EQ(par.collective(), c.shape == cost::Algorithm::kHierarchical ? "hierarchical" : "flat") << what;
        // The reducer takes the combination (one rank: the collectives are identities).
        parallel::LocalCommunicator comm;
        Tensor grads = Tensor::zeros("test.grads", {ranges.back().second});
        const parallel::BucketCaps caps{size_t(double(par.bucket_cap_mb()) * (1 << 20)),
                                        size_t(double(par.first_bucket_cap_mb()) * (1 << 20))};
        parallel::GradReducer reducer(comm, grads, ranges, par.zero_stage(), caps,
                                      parallel::parse_grad_compression(par.grad_compression()), par.error_feedback(),
                                      parallel::parse_collective_shape(par.collective()));
        EXPECT_EQ(reducer.shape() == parallel::CollectiveShape::kHierarchical,
                  c.shape == cost::Algorithm::kHierarchical)
            << what;
        ++checked;
      }
    }
  EXPECT_GT(hierarchical, 0) << "the two-node presets offer hierarchical candidates";
  EXPECT_GT(zero3, 0) << "ZeRO-3 runs flat";
  EXPECT_GT(checked, 100);
}

TEST(RunnableCandidates, ValidatorKnowsTheCollectiveFields) {
  EXPECT_NO_THROW(load_config(tiny_config(), {"parallel.collective=hierarchical", "parallel.ranks_per_node=2"}));
  EXPECT_NO_THROW(load_config(tiny_config(), {"parallel.collective=flat"}));
  auto problem = [](const std::vector<std::string>& sets) {
    try {
      load_config(tiny_config(), sets);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(problem({"parallel.collective=tree"}).find("parallel.collective \"tree\" is not supported"),
            std::string::npos);
  EXPECT_NE(problem({"parallel.collective=hierarchical", "parallel.zero_stage=1"})
                .find("parallel.collective \"hierarchical\" needs parallel.zero_stage 0"),
            std::string::npos);
  EXPECT_NE(problem({"parallel.ranks_per_node=-2"}).find("parallel.ranks_per_node"), std::string::npos);
}

// One rank: every payload's hierarchical path runs (its sub-communicators are single-rank) and
// leaves fp32 gradients unchanged, compressed ones within their quantisation.
TEST(RunnableCandidates, HierarchicalReducerOnOneRank) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 1000}, {1000, 1777}, {1777, 5000}};
  for (auto comp :
       {parallel::GradCompression::kNone, parallel::GradCompression::kBf16, parallel::GradCompression::kInt8}) {
    parallel::LocalCommunicator comm;
    Tensor grads = Tensor::zeros("test.grads", {5000});
    parallel::GradReducer reducer(comm, grads, ranges, 0, parallel::BucketCaps{4096, 1024}, comp, true,
                                  parallel::CollectiveShape::kHierarchical);
    ASSERT_NE(reducer.node_layout(), nullptr);
    EXPECT_EQ(reducer.node_layout()->str(), "1 node x 1 rank");
    std::vector<float> want(5000);
    for (int i = 0; i < 5000; ++i) want[size_t(i)] = grads.data<float>()[i] = 0.001f * float(i % 97) - 0.03f;
    reducer.begin_backward(0, 1);
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) reducer.on_grads_ready(it->first, it->second);
    reducer.finish_backward();
    for (int i = 0; i < 5000; ++i) {
      const float tol = comp == parallel::GradCompression::kNone ? 0.0f : 1e-3f;
      ASSERT_NEAR(grads.data<float>()[i], want[size_t(i)], tol) << parallel::grad_compression_name(comp) << " " << i;
    }
  }
}

}  // namespace
}  // namespace tt::strategy
