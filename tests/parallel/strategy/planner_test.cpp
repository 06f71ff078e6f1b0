// The planner on data: model specs, ZeRO memory, and the picks the cost model must make — the
// raison d'être of topotrain: PCIe 4090s and NVLink H100s get different strategies.
#include "parallel/strategy/planner.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/model/init_weights.h"
#include "core/model/model.h"
#include "parallel/topology/presets.h"

namespace tt::strategy {
namespace {

using cost::Payload;

StrategyPlan plan_on(const std::string& preset, const ModelSpec& model, PlanOptions options = {}) {
  return plan_strategy(topology::preset_topology(preset), model, options);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(ModelSpec, Gpt2LayoutAndBackwardTimeline) {
  const ModelDesc cfg = gpt2_desc(12, 12, 768, 50257, 1024);
  const ModelSpec m = model_spec(cfg, 1024, 16384);
  EXPECT_EQ(m.num_params, model_num_params(cfg));
  EXPECT_DOUBLE_EQ(m.flops_per_token, model_flops_per_token(cfg, 1024));
  ASSERT_EQ(m.tensor_ranges.size(), m.ready_fraction.size());
  EXPECT_EQ(m.ready_fraction.front(), 1.0);  // wte (tied LM head): final only after the embedding backward
  // From the final LayerNorm back to block 0, later tensors are ready earlier.
  for (size_t i = 3; i < m.ready_fraction.size(); ++i) EXPECT_LE(m.ready_fraction[i], m.ready_fraction[i - 1]) << i;
  // The LM head matmul runs first, so even the last block is ready only after a sizeable share.
  EXPECT_GT(m.ready_fraction.back(), 0.15);
  EXPECT_LT(m.ready_fraction.back(), 0.35);
  EXPECT_NEAR(m.flops_per_token, 0.86e9, 0.02e9);  // DESIGN.md: ~0.86 GFLOP/token
}

// ZeRO-3's gather units and acquire orders, as Model::forward/backward and ShardedParams run them.
TEST(ModelSpec, Zero3GroupsAndAcquireOrdersMatchTheModel) {
  const ModelDesc cfg = gpt2_desc(4, 4, 256, 16, 64);
  const ModelSpec m = model_spec(cfg, 64, 256);
  const auto groups = model_layout(cfg).groups;
  ASSERT_EQ(m.param_groups.size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_EQ(m.param_groups[g].first, groups[g].begin) << g;
    EXPECT_EQ(m.param_groups[g].second, groups[g].end) << g;
  }
  auto order = [](const std::vector<std::pair<int, double>>& acquires) {
    std::vector<int> o;
    double share = 0;
    for (const auto& [g, f] : acquires) o.push_back(g), share += f;
    EXPECT_NEAR(share, 1.0, 1e-12);  // every acquire's share of the pass, together the whole pass
    return o;
  };
  EXPECT_EQ(order(m.forward_acquires), (std::vector<int>{0, 1, 2, 3, 4, 5, 0}));  // L+1 = 5, tied head last
  EXPECT_EQ(order(m.backward_acquires), (std::vector<int>{0, 5, 4, 3, 2, 1}));
  EXPECT_EQ(m.resident_groups, std::vector<int>{0});
  // Llama-style (untied head): no resident group; the head lives with the final norm in group L+1.
  const ModelSpec llama = preset_model_spec("llama-7b", 4096);
  ASSERT_EQ(llama.param_groups.size(), 34u);
  EXPECT_EQ(llama.param_groups.back().second, llama.num_params);
  for (size_t g = 1; g < llama.param_groups.size(); ++g)
    EXPECT_EQ(llama.param_groups[g].first, llama.param_groups[g - 1].second) << g;
  EXPECT_EQ(order(llama.backward_acquires).front(), 33);
  EXPECT_TRUE(llama.resident_groups.empty());
}

// ... and the order is the one the model really acquires them in: a forward and a backward of a
// real Model reading its parameters through a ParamSource, with a tied head (GPT-2) and an untied
// one (Llama).
class RecordingSource : public ParamSource {
 public:
  RecordingSource(const std::vector<float>& full, std::vector<ParamGroup> groups)
      : full_(full), groups_(std::move(groups)) {}
  const void* acquire(int group, int) override {
    order.push_back(group);
    return full_.data() + groups_[size_t(group)].begin;
  }
  std::vector<int> order;

 private:
  const std::vector<float>& full_;
  std::vector<ParamGroup> groups_;
};

TEST(ModelSpec, Zero3AcquireOrdersAreTheModelsOwn) {
  const int B = 2, T = 4;
  for (const ModelDesc& cfg : {gpt2_desc(3, 2, 8, 11, T), llama_desc(3, 2, 1, 8, 11, T)}) {
    const ModelLayout layout = model_layout(cfg);
    std::vector<float> full(size_t(layout.numel));
    init_weights(cfg, layout, 3, 0, layout.numel, full.data());
    ModelOptions opts;
    opts.max_batch = B;
    opts.max_seq = T;
    opts.hold_params = false;
    Model model(cfg, opts);
    RecordingSource source(full, layout.groups);
    model.set_param_source(&source);
    const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8}, targets = {2, 3, 4, 5, 6, 7, 8, 9};
    model.forward(tokens.data(), targets.data(), B, T);
    const std::vector<int> forward = source.order;
    source.order.clear();
    model.backward();
    const ModelSpec m = model_spec(cfg, T, B * T);
    auto groups_of = [](const std::vector<std::pair<int, double>>& acquires) {
      std::vector<int> g;
      for (const auto& a : acquires) g.push_back(a.first);
      return g;
    };
    EXPECT_EQ(groups_of(m.forward_acquires), forward) << cfg.str();
    EXPECT_EQ(groups_of(m.backward_acquires), source.order) << cfg.str();
    EXPECT_EQ(m.resident_groups, layout.reused_groups) << cfg.str();
  }
}

TEST(ModelSpec, PresetsAndLlama7b) {
  EXPECT_NEAR(double(preset_model_spec("gpt2-350m", 1024).num_params), 355e6, 5e6);
  const ModelSpec llama = preset_model_spec("llama-7b", 4096);
  EXPECT_NEAR(double(llama.num_params), 6.74e9, 0.01e9);
  EXPECT_EQ(llama.n_layer, 32);
  EXPECT_LT(llama.ready_fraction.back(), 0.05);  // untied LM head: ready right after its matmul
  EXPECT_EQ(llama.ready_fraction.front(), 1.0);  // embeddings last
  EXPECT_THROW(preset_model_spec("gpt5", 1), Error);
}

// rank_memory's terms for Ψ = 1000 on 8 ranks (memory_model.h): the working precision's parameters
// and gradients, the reduced shard, fp32 master weights when the working precision is bf16, m and
// v in the state dtype, the int8 payload's residual.
TEST(Memory, RankMemoryTermsPerStagePrecisionAndState) {
  auto mem = [](int stage, int working, StateDType state = StateDType::kFp32, Payload payload = Payload::kFp32,
                int64_t windows = 0) {
    MemoryInputs in;
    in.num_params = 1000;
    in.ranks = 8;
    in.zero_stage = stage;
    in.working_bytes = working;
    in.state = state;
    in.payload = payload;
    in.zero3_window_elements = windows;
    return rank_memory(in);
  };
  // The CPU trainer (fp32): no master weights.
  EXPECT_DOUBLE_EQ(mem(0, 4).total(), 4000 + 4000 + 8000);
  EXPECT_DOUBLE_EQ(mem(1, 4).total(), 4000 + 4000 + 500 + 1000);
  EXPECT_DOUBLE_EQ(mem(2, 4).total(), 4000 + 4000 + 1000 + 1000);
  EXPECT_DOUBLE_EQ(mem(3, 4).total(), 500 + 1000 + 1000);
  EXPECT_DOUBLE_EQ(mem(3, 4, StateDType::kFp32, Payload::kFp32, 100).total(), 500 + 1000 + 1000 + 800);
  EXPECT_DOUBLE_EQ(mem(0, 4, StateDType::kFp32, Payload::kInt8).comm, 4000);
  // bf16 working copies on GPUs: fp32 master weights join the optimizer state (DESIGN's K = 12).
  EXPECT_DOUBLE_EQ(mem(0, 2).total(), 2000 + 2000 + 12000);
  EXPECT_DOUBLE_EQ(mem(3, 2).optimizer, 1500);
  // Compact moments: bf16 halves m and v; int8 keeps a byte each plus a block scale per 256.
  EXPECT_DOUBLE_EQ(mem(0, 4, StateDType::kBf16).optimizer, 4000);
  EXPECT_DOUBLE_EQ(mem(0, 4, StateDType::kInt8).optimizer, 1000 * (2 + 8.0 / 256));
  EXPECT_EQ(mem(0, 2).biggest(), "optimizer state");
  // GPT-2's windows: the tied embeddings (resident) and two blocks, for parameters and gradients alike.
  const ModelDesc cfg = gpt2_desc(4, 4, 256, 16, 64);
  const auto groups = model_layout(cfg).groups;
  EXPECT_EQ(zero3_window_elements(model_spec(cfg, 64, 256)), groups[0].size() + 2 * groups[1].size());
  // Activations are the model's plan for the micro-batch.
  MemoryInputs in;
  in.num_params = 1;
  in.desc = &cfg;
  in.batch = 2;
  in.seq_len = 64;
  in.recompute = {RecomputeMode::kFull, 0};
  EXPECT_DOUBLE_EQ(rank_memory(in).activations,
                   double(ActivationPlan(cfg, Device::cpu(), DType::kF32, 2, 64, in.recompute).total_bytes()));
}

// On CPU ranks, a memory budget that only ZeRO-3 meets makes it the pick, and `train` runs it.
TEST(Planner, CpuRanksPickRunnableZero3WhenOnlyItFits) {
  const ModelSpec gpt2 = model_spec(gpt2_desc(12, 12, 768, 50257, 1024), 1024, 8 * 1024);
  cost::Cluster cpus = cost::cluster_of(topology::preset_topology("8x4090-pcie"));
  cpus.has_gpus = false;
  PlanOptions options;
  options.state_dtypes = {StateDType::kFp32};  // no memory levers but the ZeRO stage
  options.recompute_modes = {RecomputeMode::kNone};
  const double psi = double(gpt2.num_params);
  options.memory_budget_bytes =
      uint64_t(0.5 * (candidate_memory(cpus, gpt2, 3, Payload::kFp32, {}, StateDType::kFp32).total() +
                      candidate_memory(cpus, gpt2, 1, Payload::kFp32, {}, StateDType::kFp32).total()));
  ASSERT_GT(double(options.memory_budget_bytes), 4 * psi);
  const StrategyPlan plan = plan_strategy(cpus, gpt2, options);
  ASSERT_NE(plan.picked(), nullptr) << plan.reason;
  EXPECT_EQ(plan.picked()->zero_stage, 3) << plan.reason;
  EXPECT_TRUE(plan.picked()->runnable());
  EXPECT_EQ(plan.picked()->shape, cost::Algorithm::kRing);
  EXPECT_FALSE(plan.picked()->config_settings().empty());
}

// ZeRO-3 cuts every parameter group across all ranks (parallel/ddp/sharding.h): one candidate per
// payload and shape whatever the bucket cap, one reduce-scatter per group, and every gather and
// reduce-scatter priced as a balanced collective. With no compute to hide them, a 2-rank step's link
// time is exactly its collectives' transfers back to back: every group gathered in forward, the three blocks
// not left in the two windows gathered again in backward, every group reduced. (Priced per owner,
// as contiguous shards would make them, each would take twice as long.)
TEST(Planner, Zero3GathersAndReducesEachGroupAcrossAllRanks) {
  const ModelDesc cfg = gpt2_desc(4, 4, 256, 16, 64);
  ModelSpec model = model_spec(cfg, 64, 256);
  model.measured_forward_s = model.measured_backward_s = 1e-12;
  cost::Cluster cpus = cost::cluster_of(topology::preset_topology("8x4090-pcie"), 2);
  cpus.has_gpus = false;
  cpus.intra.latency_us = 0;  // latencies of back-to-back collectives overlap; transfers do not
  const StrategyPlan plan = plan_strategy(cpus, model, PlanOptions{});
  int zero3 = 0;
  for (const Candidate& c : plan.candidates) zero3 += c.zero_stage == 3;
  EXPECT_EQ(zero3, 3);  // fp32 ring only (no bucket cap, no compressed ZeRO, one node), per optimizer state
  const Candidate c =
      evaluate_candidate(cpus, model, compute_times(model, cpus), 25, Payload::kFp32, cost::Algorithm::kRing, 3, 0);
  const auto groups = model_layout(cfg).groups;
  EXPECT_EQ(c.num_buckets, int(groups.size()));
  EXPECT_EQ(c.bucket_name(), "group");
  auto cost_of = [&](cost::Collective op, const ParamGroup& g) {
    return cost::collective_cost(op, cost::Algorithm::kRing, 4.0 * double(g.size()), cpus).total_s();
  };
  double expected = 0;
  for (const ParamGroup& g : groups)
    expected += cost_of(cost::Collective::kAllGather, g) + cost_of(cost::Collective::kReduceScatter, g);
  for (int block : {1, 2, 3}) expected += cost_of(cost::Collective::kAllGather, groups[size_t(block)]);
  EXPECT_NEAR(c.comm_s, expected, 1e-6 * expected);
  EXPECT_NEAR(c.exposed_s, expected, 1e-6 * expected);
}

TEST(Planner, Int8WinsOnTwoNodesOver1GbE) {
  for (const char* preset : {"2x8x4090-pcie-1gbe", "2x8xh100-sxm-1gbe"}) {
    const StrategyPlan plan = plan_on(preset, preset_model_spec("gpt2-124m", 16384));
    ASSERT_NE(plan.picked(), nullptr) << preset;
    EXPECT_EQ(plan.picked()->payload, Payload::kInt8) << preset << ": " << plan.reason;
    EXPECT_NE(plan.reason.find("int8+ef"), std::string::npos) << plan.reason;
    EXPECT_NE(plan.reason.find("1 GbE"), std::string::npos) << plan.reason;
    EXPECT_NE(plan.reason.find("fp32 all-reduce"), std::string::npos) << plan.reason;
  }
}

TEST(Planner, Fp32WinsOnSingleNodeNvlink) {
  for (const char* preset : {"8xh100-sxm", "8xa100-sxm"}) {
    const StrategyPlan plan = plan_on(preset, preset_model_spec("gpt2-124m", 16384));
    ASSERT_NE(plan.picked(), nullptr);
    EXPECT_EQ(plan.picked()->payload, Payload::kFp32) << preset << ": " << plan.reason;
    EXPECT_NE(plan.picked()->shape, cost::Algorithm::kHierarchical);
    EXPECT_FALSE(has(plan.nccl_env, "NCCL_P2P_DISABLE=1"));
  }
}

// GPT-2 124M, 16 x 1024 tokens per GPU: on 8x4090 the fp32 ring runs at ~22 GB/s busbw through host
// memory, so the last bucket — the tied wte/LM-head gradient, final only when backward ends —
// sticks out by >10 ms of a ~215 ms step; bf16 halves that, a gain beyond the 3% tie band. On
// 8xH100 NVLink (400 GB/s busbw) the same gradients take ~3.6 ms, mostly hidden: compression buys
// nothing, so fp32 (the most precise) is kept.
TEST(Planner, PcieAnd4090sPickDifferentlyFromNvlinkH100s) {
  const ModelSpec model = preset_model_spec("gpt2-124m", 16384);
  const StrategyPlan pcie = plan_on("8x4090-pcie", model);
  const StrategyPlan nvlink = plan_on("8xh100-sxm", model);
  ASSERT_NE(pcie.picked(), nullptr);
  ASSERT_NE(nvlink.picked(), nullptr);
  EXPECT_NE(pcie.picked()->label(), nvlink.picked()->label());
  EXPECT_NE(pcie.picked()->payload, Payload::kFp32) << pcie.reason;
  EXPECT_EQ(nvlink.picked()->payload, Payload::kFp32) << nvlink.reason;
  EXPECT_TRUE(has(pcie.nccl_env, "NCCL_P2P_DISABLE=1"));  // no P2P on GeForce 4090s
}

TEST(Planner, HierarchicalBeatsFlatWhenTheNetworkIsMuchSlower) {
  const StrategyPlan plan = plan_on("2x8xh100-sxm-100gbe", preset_model_spec("gpt2-124m", 16384));
  const Candidate *flat = nullptr, *hier = nullptr;
  for (const auto& c : plan.candidates) {
    if (c.bucket_mb != 25 || c.payload != Payload::kFp32 || c.zero_stage != 0) continue;
    if (c.shape == cost::Algorithm::kRing) flat = &c;
    if (c.shape == cost::Algorithm::kHierarchical) hier = &c;
  }
  ASSERT_TRUE(flat && hier);
  EXPECT_LT(hier->comm_s, flat->comm_s);
  EXPECT_LE(hier->step_s, flat->step_s);
}

TEST(Planner, MemoryExcludesZero0For7bOn4090sAndPicksAStageThatFits) {
  const ModelSpec llama = preset_model_spec("llama-7b", 4096);
  const StrategyPlan plan = plan_on("8x4090-pcie", llama);
  for (const auto& c : plan.candidates)
    if (c.zero_stage == 0) EXPECT_FALSE(c.fits) << c.label();  // 16Ψ = 108 GB > 24 GB
  ASSERT_NE(plan.picked(), nullptr) << plan.reason;
  EXPECT_TRUE(plan.picked()->fits);
  EXPECT_GT(plan.picked()->zero_stage, 0);
  EXPECT_LE(plan.picked()->memory_bytes, plan.memory_limit_bytes);
  // 7B x 16 B / 8 = 13.5 GB: only full sharding fits in 24 GB, and `train` runs it (flat).
  EXPECT_EQ(plan.picked()->zero_stage, 3);
  EXPECT_NE(plan.reason.find("ZeRO-3 because ZeRO-2 needs"), std::string::npos) << plan.reason;
  EXPECT_TRUE(plan.picked()->runnable());
  EXPECT_NE(plan.picked()->shape, cost::Algorithm::kHierarchical);

  // 80 GB H100s: ZeRO-0 still does not fit (108 GB), ZeRO-1 (37 GB) does.
  const StrategyPlan h100 = plan_on("8xh100-sxm", llama);
  ASSERT_NE(h100.picked(), nullptr);
  EXPECT_GE(h100.picked()->zero_stage, 1);
  EXPECT_LE(h100.picked()->zero_stage, 2);

  // A budget nothing fits in: no pick, a reason that says so.
  PlanOptions tiny;
  tiny.memory_budget_bytes = 1'000'000'000;
  const StrategyPlan none = plan_on("8x4090-pcie", llama, tiny);
  EXPECT_EQ(none.picked(), nullptr);
  EXPECT_NE(none.reason.find("nothing fits"), std::string::npos) << none.reason;
}

TEST(Planner, MoreBandwidthNeverSlowsThePick) {
  topology::Topology t = topology::preset_topology("2x8x4090-pcie-1gbe");
  const ModelSpec model = preset_model_spec("gpt2-124m", 16384);
  double last = 1e30;
  for (double bw : {0.1, 1.0, 10.0, 25.0, 100.0}) {
    t.set_inter_node_busbw_gbps(bw);
    const StrategyPlan plan = plan_strategy(t, model, {});
    ASSERT_NE(plan.picked(), nullptr);
    // The pick may be a tie-broken simpler plan within the tolerance of the fastest.
    EXPECT_LE(plan.candidates.front().step_s, last) << bw;
    last = plan.candidates.front().step_s;
  }
}

TEST(Planner, SingleRankHasNoCommunicationAndTiesGoToTheSimplest) {
  PlanOptions one;
  one.ranks = 1;
  const StrategyPlan plan = plan_on("8xh100-sxm", preset_model_spec("gpt2-124m", 16384), one);
  ASSERT_NE(plan.picked(), nullptr);
  EXPECT_EQ(plan.picked()->comm_s, 0.0);
  EXPECT_EQ(plan.picked()->payload, Payload::kFp32);
  EXPECT_EQ(plan.picked()->bucket_mb, 25);
  EXPECT_EQ(plan.picked()->zero_stage, 0);
  EXPECT_NE(plan.reason.find("single rank"), std::string::npos);
}

TEST(Planner, ParamGatherBytesFollowTheTrainersPrecision) {
  ModelSpec model = preset_model_spec("gpt2-124m", 16384);
  cost::Cluster gpu = cost::cluster_of(topology::preset_topology("8x4090-pcie"));
  cost::Cluster cpu = gpu;
  cpu.has_gpus = false;
  EXPECT_EQ(param_gather_bytes(model, gpu), 2);  // bf16 working copy
  EXPECT_EQ(param_gather_bytes(model, cpu), 4);  // the CPU trainer gathers fp32
  const ComputeTimes ct{0.1, 0.2, 0};
  auto gather = [&](const cost::Cluster& cl) {
    return evaluate_candidate(cl, model, ct, 25, Payload::kFp32, cost::Algorithm::kRing, 1, 0).gather_s;
  };
  const double ag4 =
      cost::collective_cost(cost::Collective::kAllGather, cost::Algorithm::kRing, 4.0 * double(model.num_params), cpu)
          .total_s();
  EXPECT_DOUBLE_EQ(gather(cpu), ag4);
  EXPECT_DOUBLE_EQ(gather(gpu), cost::collective_cost(cost::Collective::kAllGather, cost::Algorithm::kRing,
                                                      2.0 * double(model.num_params), gpu)
                                    .total_s());
  model.param_gather_bytes = 2;  // explicit: overrides the CPU default
  EXPECT_DOUBLE_EQ(param_gather_bytes(model, cpu), 2);
  EXPECT_LT(gather(cpu), ag4);
}

TEST(Planner, MeasuredBackwardTimeOverridesPeakTimesMfu) {
  ModelSpec model = preset_model_spec("gpt2-124m", 16384);
  model.measured_backward_s = 2.4;
  const StrategyPlan plan = plan_on("2x8x4090-pcie-1gbe", model);
  EXPECT_DOUBLE_EQ(plan.compute.backward_s, 2.4);
  EXPECT_DOUBLE_EQ(plan.compute.forward_s, 1.2);
}

}  // namespace
}  // namespace tt::strategy

namespace tt::strategy {
namespace {

// GradReducer's compressed all-reduce all-gathers every rank's compressed bucket: (n-1)·S_c per
// rank instead of a ring's 2(n-1)/n·S_c. On 8 ranks that is 7 x 2 B = 14 B/elem for bf16 against
// fp32 ring's 1.75 x 4 = 7 B/elem, so under that algorithm compression stops paying on 8x4090.
TEST(Planner, AllGatherCompressedAllReduceIsPricedAsGradReducerRunsIt) {
  const ModelSpec model = preset_model_spec("gpt2-124m", 16384);
  PlanOptions gather;
  gather.compressed_all_reduce = CompressedAllReduce::kAllGather;
  const StrategyPlan ring = plan_on("8x4090-pcie", model);
  const StrategyPlan as_trained = plan_on("8x4090-pcie", model, gather);
  ASSERT_NE(as_trained.picked(), nullptr);
  EXPECT_EQ(as_trained.picked()->payload, Payload::kFp32) << as_trained.reason;
  EXPECT_TRUE(std::any_of(ring.notes.begin(), ring.notes.end(),
                          [](const std::string& n) { return n.find("GradReducer all-gathers") != std::string::npos; }));
  for (const auto& c : as_trained.candidates)
    EXPECT_FALSE(c.payload != Payload::kFp32 && c.zero_stage == 0 && c.shape == cost::Algorithm::kTree) << c.label();
}

}  // namespace
}  // namespace tt::strategy

namespace tt::strategy {
namespace {

// One pick rule: what the run can take is an input to the planner, and its pick, tie tolerance and
// simplicity rule included, is what `strategy: auto` applies (launch/train/auto_strategy.h builds the
// options from the config; `topotrain plan` passes the same for a strategy-auto config).
TEST(Planner, PickHonoursTheRunsForcedFieldsAndCommunicator) {
  const ModelSpec model = preset_model_spec("gpt2-124m", 16384);
  const StrategyPlan free = plan_on("8x4090-pcie", model);
  ASSERT_NE(free.picked(), nullptr);
  PlanOptions forced;
  forced.forced_zero_stage = 2;
  const StrategyPlan z2 = plan_on("8x4090-pcie", model, forced);
  ASSERT_NE(z2.picked(), nullptr) << z2.reason;
  EXPECT_EQ(z2.picked()->zero_stage, 2);
  for (const Candidate& c : z2.candidates) EXPECT_EQ(c.allowed, c.zero_stage == 2 && c.fits) << c.label();
  // Among the allowed candidates the planner's own rule holds: fastest, ties to the simplest.
  for (const Candidate& c : z2.candidates)
    if (c.allowed) EXPECT_GE(c.step_s * (1 + forced.tie_tolerance), z2.picked()->step_s) << c.label();

  PlanOptions int8;
  int8.forced_grad_compression = "int8";
  const StrategyPlan compressed = plan_on("8x4090-pcie", model, int8);
  ASSERT_NE(compressed.picked(), nullptr);
  EXPECT_EQ(compressed.picked()->payload, Payload::kInt8);
  EXPECT_EQ(compressed.picked()->zero_stage, 0);

  PlanOptions mpi;  // tree is NCCL's (NCCL_ALGO=Tree): never picked for the MPI backend
  mpi.tree_selectable = false;
  for (const char* preset : {"8xh100-sxm", "8x4090-pcie", "2x8xh100-sxm-1gbe"}) {
    const StrategyPlan p = plan_on(preset, model, mpi);
    ASSERT_NE(p.picked(), nullptr) << preset;
    EXPECT_NE(p.picked()->shape, cost::Algorithm::kTree) << preset;
  }

  // Forced fields that nothing satisfies: no pick, and a reason that says so.
  PlanOptions impossible;
  impossible.forced_zero_stage = 1;
  impossible.forced_grad_compression = "int8";  // compression is ZeRO-0 only
  const StrategyPlan none = plan_on("8x4090-pcie", model, impossible);
  EXPECT_EQ(none.picked(), nullptr);
  EXPECT_NE(none.reason.find("forced fields"), std::string::npos) << none.reason;
}

}  // namespace
}  // namespace tt::strategy

namespace tt::strategy {
namespace {

ModelSpec llama7b(int seq_len) {
  const int accum = 16;
  return model_spec(model_preset("llama2-7b"), seq_len, int64_t(seq_len) * accum, accum);
}

// Llama-2-7B at T=4096 (one sequence per micro-step) does not fit a 4090 node even at ZeRO-3 without
// recompute: the planner recomputes the fewest blocks that make it fit (one block fewer does not),
// says so, and prices the re-run forward. At T=1024 ZeRO-3 fits as is; on A100-80GB ZeRO-1 does.
TEST(Planner, Llama7bRecomputesJustEnoughOn4090sAndNothingOnA100s) {
  const cost::Cluster rtx = cost::cluster_of(topology::preset_topology("8x4090-pcie"));
  const ModelSpec long_seq = llama7b(4096);
  const StrategyPlan plan = plan_strategy(rtx, long_seq, PlanOptions{});
  ASSERT_NE(plan.picked(), nullptr) << plan.reason;
  const Candidate& p = *plan.picked();
  EXPECT_EQ(p.zero_stage, 3);
  EXPECT_EQ(p.recompute.mode, RecomputeMode::kFull);
  ASSERT_GT(p.recompute.blocks, 2);
  ASSERT_LT(p.recompute.blocks, long_seq.n_layer);
  EXPECT_TRUE(p.fits);
  const Candidate fewer = with_levers(p, rtx, long_seq, plan.compute, {RecomputeMode::kFull, p.recompute.blocks - 1},
                                      p.state, plan.memory_limit_bytes);
  EXPECT_FALSE(fewer.fits);
  EXPECT_GT(p.recompute_s, 0);
  EXPECT_LT(fewer.recompute_s, p.recompute_s);
  EXPECT_NE(plan.reason.find("full recompute of " + std::to_string(p.recompute.blocks) + " blocks"), std::string::npos)
      << plan.reason;
  const auto settings = p.config_settings();
  EXPECT_NE(std::find(settings.begin(), settings.end(), "train.recompute=full"), settings.end());

  const StrategyPlan short_seq = plan_strategy(rtx, llama7b(1024), PlanOptions{});
  ASSERT_NE(short_seq.picked(), nullptr) << short_seq.reason;
  EXPECT_EQ(short_seq.picked()->zero_stage, 3);
  EXPECT_EQ(short_seq.picked()->recompute.mode, RecomputeMode::kNone);
  EXPECT_EQ(short_seq.picked()->state, StateDType::kFp32);

  const cost::Cluster a100 = cost::cluster_of(topology::preset_topology("8xa100-sxm"));
  for (int T : {4096, 1024}) {
    const StrategyPlan big = plan_strategy(a100, llama7b(T), PlanOptions{});
    ASSERT_NE(big.picked(), nullptr) << big.reason;
    EXPECT_LT(big.picked()->zero_stage, 3) << T;
    EXPECT_EQ(big.picked()->recompute.mode, RecomputeMode::kNone) << T;
    EXPECT_EQ(big.picked()->state, StateDType::kFp32) << T;
  }
}

// A forced recompute mode or state is what the pick takes, even where the run would fit without.
TEST(Planner, ForcedRecomputeAndStateAreHonoured) {
  const cost::Cluster a100 = cost::cluster_of(topology::preset_topology("8xa100-sxm"));
  PlanOptions options;
  options.forced_recompute = "selective";
  options.forced_recompute_blocks = 0;
  options.forced_state_dtype = "int8";
  const StrategyPlan plan = plan_strategy(a100, llama7b(1024), options);
  ASSERT_NE(plan.picked(), nullptr) << plan.reason;
  EXPECT_EQ(plan.picked()->recompute.mode, RecomputeMode::kSelective);
  EXPECT_EQ(plan.picked()->recompute.blocks, 32);
  EXPECT_EQ(plan.picked()->state, StateDType::kInt8);
}

// Nothing fits one 4090: the reason names the smallest plan's memory by consumer, the GPU memory it
// would fit in, and how many 4090s hold it with ZeRO-3, full recompute and int8 state.
TEST(Planner, NothingFitsSaysWhatWould) {
  const cost::Cluster one = cost::cluster_of(topology::preset_topology("8x4090-pcie"), 1);
  const StrategyPlan plan = plan_strategy(one, llama7b(4096), PlanOptions{});
  EXPECT_EQ(plan.picked(), nullptr);
  EXPECT_NE(plan.reason.find("nothing fits in 23.2 GB/GPU"), std::string::npos) << plan.reason;
  EXPECT_NE(plan.reason.find("optimizer state"), std::string::npos) << plan.reason;
  EXPECT_NE(plan.reason.find("it fits on GPUs with >="), std::string::npos) << plan.reason;
  EXPECT_NE(plan.reason.find("or on 5 of these GPUs"), std::string::npos) << plan.reason;
}

}  // namespace
}  // namespace tt::strategy
