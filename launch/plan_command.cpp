// `topotrain plan --config F (--preset NAME | --topology FILE) [--gpus N] [--json]`: prices every
// gradient-communication strategy for the config's model and batch on a topology and picks one
// (parallel/strategy/planner.h), printing the candidates, the pick with the config overrides that
// select it, a one-line reason and NCCL environment hints. Decisions live in the planner; this file
// only reads inputs and formats.
// `topotrain plan (--preset NAME | --topology FILE) --predict-collective OPS --bytes SIZES` instead
// prints the cost model's time for single collectives (no config needed), in bench comm's size
// convention, so measured `bench comm` times can be compared with the model (launch/ground_truth.sh).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/config.h"
#include "core/error.h"
#include "core/format.h"
#include "core/model/weights.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/train/auto_strategy.h"
#include "parallel/strategy/planner.h"
#include "parallel/topology/presets.h"
#include "parallel/topology/topology_io.h"

namespace tt {

namespace {

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

nlohmann::json candidate_json(const strategy::Candidate& c) {
  return {{"label", c.label()},
          {"bucket_mb", c.zero_stage == 3 ? nlohmann::json() : nlohmann::json(c.bucket_mb)},  // ZeRO-3: per group
          {"payload", cost::payload_name(c.payload)},
          {"shape", cost::algorithm_name(c.shape)},
          {"collective", c.collective_name()},
          {"zero_stage", c.zero_stage},
          {"num_buckets", c.num_buckets},
          {"comm_s", c.comm_s},
          {"exposed_s", c.exposed_s},
          {"compute_s", c.compute_s},
          {"optimizer_s", c.optimizer_s},
          {"gather_s", c.gather_s},
          {"step_s", c.step_s},
          {"recompute", recompute_name(c.recompute.mode)},
          {"recompute_blocks", c.recompute.blocks},
          {"recompute_s", c.recompute_s},
          {"state_dtype", state_dtype_name(c.state)},
          {"memory_bytes", c.memory_bytes},
          {"memory",
           {{"parameters", c.memory.params},
            {"gradients", c.memory.grads},
            {"optimizer_state", c.memory.optimizer},
            {"activations", c.memory.activations},
            {"comm_buffers", c.memory.comm}}},
          {"fits", c.fits},
          {"eligible", c.eligible},
          {"runnable", c.runnable()},
          {"config_settings", c.config_settings()}};
}

// "64K" -> 65536 (binary suffixes K, M, G; optional trailing B), as `bench comm --sizes`.
std::vector<int64_t> parse_byte_list(const std::string& spec) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string s = spec.substr(start, comma - start);
    start = comma + 1;
    if (s.empty()) continue;
    out.push_back(parse_byte_size(s, "topotrain plan --bytes", "use e.g. 64K,1M,16M"));
  }
  if (out.empty()) throw Error(ErrorKind::kUsage, "no sizes in '" + spec + "'", "topotrain plan --bytes");
  return out;
}

// --predict-collective: the cost model's time per collective and size on the cluster.
int predict_collectives(const ArgParser& p, const cost::Cluster& cl, bool json) {
  std::vector<cost::Collective> ops;
  {
    std::string spec = p.get("--predict-collective") + ",";
    size_t start = 0, comma;
    while ((comma = spec.find(',', start)) != std::string::npos) {
      const std::string op = spec.substr(start, comma - start);
      start = comma + 1;
      if (op.empty()) continue;
      if (op == "all_reduce")
        ops.push_back(cost::Collective::kAllReduce);
      else if (op == "reduce_scatter")
        ops.push_back(cost::Collective::kReduceScatter);
      else if (op == "all_gather")
        ops.push_back(cost::Collective::kAllGather);
      else
        throw Error(ErrorKind::kUsage, "unknown collective '" + op + "'", "--predict-collective",
                    "all_reduce, reduce_scatter or all_gather (comma-separated)");
    }
  }
  const std::string algo_name = p.get("--algorithm");
  cost::Algorithm algo = cost::Algorithm::kRing;
  if (algo_name == "tree")
    algo = cost::Algorithm::kTree;
  else if (algo_name == "hierarchical")
    algo = cost::Algorithm::kHierarchical;
  else if (algo_name != "ring")
    throw Error(ErrorKind::kUsage, "unknown --algorithm '" + algo_name + "'", "--algorithm",
                "ring, tree or hierarchical");
  const std::vector<int64_t> sizes = parse_byte_list(p.get("--bytes"));
  nlohmann::json rows = nlohmann::json::array();
  if (!json)
    std::printf("%-15s %12s %5s %12s %12s %12s %10s\n", "collective", "bytes", "ranks", "latency_us", "transfer_us",
                "time_us", "busbw_GB/s");
  for (const cost::Collective op : ops) {
    if (algo == cost::Algorithm::kTree && op != cost::Collective::kAllReduce)
      throw Error(ErrorKind::kUsage, "tree is an all_reduce algorithm only", "--algorithm");
    for (const int64_t bytes : sizes) {
      const cost::CollectiveCost c = cost::collective_cost(op, algo, double(bytes), cl);
      const double factor = cl.ranks <= 1                        ? 0.0
                            : op == cost::Collective::kAllReduce ? 2.0 * (cl.ranks - 1) / cl.ranks
                                                                 : double(cl.ranks - 1) / cl.ranks;
      const double busbw = c.total_s() > 0 ? double(bytes) * factor / c.total_s() / 1e9 : 0.0;
      if (json)
        rows.push_back({{"collective", cost::collective_name(op)},
                        {"algorithm", cost::algorithm_name(algo)},
                        {"bytes", bytes},
                        {"ranks", cl.ranks},
                        {"latency_s", c.latency_s},
                        {"transfer_s", c.transfer_s},
                        {"time_s", c.total_s()},
                        {"busbw_gbps", busbw}});
      else
        std::printf("%-15s %12lld %5d %12.1f %12.1f %12.1f %10.3f\n", cost::collective_name(op), (long long)bytes,
                    cl.ranks, c.latency_s * 1e6, c.transfer_s * 1e6, c.total_s() * 1e6, busbw);
    }
  }
  if (json) {
    nlohmann::json j;
    j["ranks"] = cl.ranks;
    j["nodes"] = cl.nodes;
    j["intra_node"] = cl.intra.describe();
    if (cl.nodes > 1) j["inter_node"] = cl.inter.describe();
    j["predictions"] = rows;
    std::printf("%s\n", j.dump(2).c_str());
  }
  return 0;
}

std::string overrides_for(const strategy::Candidate& c) {
  if (!c.runnable())
    return str("(", c.label(), " is a priced memory fallback: `topotrain train` runs flat ZeRO-3 on CPU ranks only)");
  std::string out;
  for (const std::string& kv : c.config_settings()) out += (out.empty() ? "--set " : " --set ") + kv;
  return out;
}

}  // namespace

int plan_main(const Args& args) {
  ArgParser p("topotrain plan",
              "Pick the gradient-communication strategy (bucket size, payload precision, collective shape, ZeRO "
              "stage) for the config's model and batch on a topology, from the alpha-beta cost model. Exit code 5 "
              "when no candidate fits in memory.");
  p.option("--config", "FILE", "run config (.pbtxt): model and batch (not needed with --predict-collective)")
      .repeated("--set", "KEY=VALUE", "override a config field")
      .option("--preset", "NAME", "topology preset, e.g. 8x4090-pcie, 8xh100-sxm, 2x8xh100-sxm-4x200g-ib")
      .option("--topology", "FILE", "topology file (`topotrain probe --dump FILE`)")
      .option("--gpus", "N", "data-parallel ranks (default: every GPU of the topology)")
      .option("--memory-budget", "GB",
              "per-GPU memory budget (default: train.memory_budget_bytes, else 90% of the GPU's)")
      .option("--mfu", "X",
              "model FLOP utilisation for compute time (default: the device table's calibrated figure, else 0.4)")
      .option("--matmul-precision", "P",
              "price the linear layers in default, fp8, int8, or auto (each the GPU has; the planner picks) "
              "(default: train.matmul_precision)")
      .option("--backward-s", "S", "measured backward time per step, overriding peak x MFU")
      .option("--forward-s", "S", "measured forward time per step (with --backward-s; default backward/2)")
      .option("--optimizer-s", "S",
              "measured optimizer pass per step on one rank over all parameters (default: memory-bandwidth estimate)")
      .option("--compressed-all-reduce", "ALGO",
              "how bf16/int8 all-reduce is priced: ring (compressed reduce-scatter + all-gather, as GradReducer "
              "runs it) or allgather (all-gather whole compressed buckets, for comparison)",
              "ring")
      .option("--top", "N", "rows of the candidate table (0 = all)", "20")
      .option("--predict-collective", "OPS",
              "instead of planning: the cost model's time for these collectives (all_reduce,reduce_scatter,"
              "all_gather) at --bytes, sizes as in `bench comm` (the whole buffer)")
      .option("--bytes", "SIZES", "buffer sizes for --predict-collective (K/M/G binary)", "64K,1M,16M")
      .option("--algorithm", "ALGO", "algorithm for --predict-collective: ring, tree or hierarchical", "ring")
      .flag("--json", "print one JSON object instead of tables");
  if (!p.parse(args)) return 0;

  const bool has_preset = !p.get("--preset").empty(), has_file = !p.get("--topology").empty();
  if (has_preset == has_file)
    throw Error(ErrorKind::kUsage, has_preset ? "--preset and --topology both given" : "no topology given",
                "topotrain plan", "pass --preset NAME (see `topotrain probe --list-presets`) or --topology FILE");
  const topology::Topology topo =
      has_preset ? topology::preset_topology(p.get("--preset")) : topology::load_topology(p.get("--topology"));
  const int topo_ranks = cost::cluster_of(topo).ranks;

  if (!p.get("--predict-collective").empty()) {
    const int ranks = p.has("--gpus") ? int(p.get_int64_in("--gpus", 1, 1 << 20)) : 0;
    return predict_collectives(p, cost::cluster_of(topo, ranks), p.get_flag("--json"));
  }
  const std::string config_path = p.get("--config");
  if (config_path.empty())
    throw Error(ErrorKind::kUsage, "--config is required", "topotrain plan",
                "pass --config FILE (or --predict-collective OPS to price single collectives)");
  const config::Config cfg = load_config(config_path, p.get_all("--set"));

  // A config with strategy "auto" is planned as `train` will: with the fields it forces and what its
  // communicator can select (NCCL on GPU ranks), so both print the same pick.
  const int ranks = p.has("--gpus") ? int(p.get_int64_in("--gpus", 1, topo_ranks)) : 0;
  strategy::PlanOptions options = cfg.parallel().strategy() == "auto"
                                      ? plan_options(cfg, ranks, cost::cluster_of(topo, ranks).has_gpus)
                                      : strategy::PlanOptions{};
  options.ranks = ranks;
  options.matmul_precisions = p.has("--matmul-precision")
                                  ? offered_matmul_precisions(p.get("--matmul-precision"), "--matmul-precision")
                                  : offered_matmul_precisions(cfg.train().matmul_precision(), "train.matmul_precision");
  const std::string car = p.get("--compressed-all-reduce");
  if (car == "allgather")
    options.compressed_all_reduce = strategy::CompressedAllReduce::kAllGather;
  else if (car != "ring")
    throw Error(ErrorKind::kUsage, "unknown --compressed-all-reduce '" + car + "'", "--compressed-all-reduce",
                "ring or allgather");
  if (p.has("--memory-budget")) {
    const double budget = p.get_double("--memory-budget");
    if (!(budget > 0)) throw Error(ErrorKind::kUsage, "--memory-budget must be > 0 (GB)", "--memory-budget");
    options.memory_budget_bytes = uint64_t(budget * 1e9);
  } else if (cfg.train().memory_budget_bytes() > 0) {  // (plan_options has it already for strategy auto)
    options.memory_budget_bytes = cfg.train().memory_budget_bytes();
  }

  const int accum = cfg.train().grad_accum_steps();
  const int64_t tokens = int64_t(cfg.train().batch_size()) * cfg.train().seq_len() * accum;
  strategy::ModelSpec model = strategy::model_spec(run_model_desc(cfg), cfg.train().seq_len(), tokens, accum);
  if (p.has("--mfu")) {
    model.mfu = p.get_double("--mfu");
    if (!(model.mfu > 0 && model.mfu <= 1)) throw Error(ErrorKind::kUsage, "--mfu must be in (0, 1]", "--mfu");
  }
  if (p.has("--backward-s")) {
    model.measured_backward_s = p.get_double("--backward-s");
    if (!(model.measured_backward_s > 0)) throw Error(ErrorKind::kUsage, "--backward-s must be > 0", "--backward-s");
  }
  if (p.has("--forward-s")) {
    if (!p.has("--backward-s")) throw Error(ErrorKind::kUsage, "--forward-s needs --backward-s", "--forward-s");
    model.measured_forward_s = p.get_double("--forward-s");
    if (!(model.measured_forward_s > 0)) throw Error(ErrorKind::kUsage, "--forward-s must be > 0", "--forward-s");
  }
  if (p.has("--optimizer-s")) {
    model.measured_optimizer_s = p.get_double("--optimizer-s");
    if (!(model.measured_optimizer_s > 0)) throw Error(ErrorKind::kUsage, "--optimizer-s must be > 0", "--optimizer-s");
  }

  const strategy::StrategyPlan plan = strategy::plan_strategy(topo, model, options);
  const cost::Cluster& cl = plan.cluster;
  const strategy::Candidate* pick = plan.picked();

  if (p.get_flag("--json")) {
    nlohmann::json j;
    j["topology"] = topo.name();
    j["topology_source"] = topo.source();
    j["model"] = model.name;
    j["params"] = model.num_params;
    j["tokens_per_rank"] = model.tokens_per_rank;
    j["ranks"] = cl.ranks;
    j["nodes"] = cl.nodes;
    j["ranks_per_node"] = cl.ranks_per_node;
    j["intra_node"] = cl.intra.describe();
    if (cl.nodes > 1) j["inter_node"] = cl.inter.describe();
    j["forward_s"] = plan.compute.forward_s;
    j["backward_s"] = plan.compute.backward_s;
    j["memory_limit_bytes"] = plan.memory_limit_bytes;
    j["candidates"] = nlohmann::json::array();
    for (const auto& c : plan.candidates) j["candidates"].push_back(candidate_json(c));
    j["pick_index"] = plan.pick;
    j["pick"] = pick ? candidate_json(*pick) : nlohmann::json(nullptr);
    j["config_overrides"] = pick ? overrides_for(*pick) : "";
    j["reason"] = plan.reason;
    j["nccl_env"] = plan.nccl_env;
    j["notes"] = plan.notes;
    std::printf("%s\n", j.dump(2).c_str());
    return pick ? 0 : 5;
  }

  std::printf("topology %s (%s): %d rank%s = %d node%s x %d, intra-node %s", topo.name().c_str(), topo.source().c_str(),
              cl.ranks, cl.ranks == 1 ? "" : "s", cl.nodes, cl.nodes == 1 ? "" : "s", cl.ranks_per_node,
              cl.intra.describe().c_str());
  if (cl.nodes > 1) std::printf(", inter-node %s", cl.inter.describe().c_str());
  std::printf("\ndevice %s: %.0f TFLOP/s bf16, %.0f GB/s memory, %s\n", cl.device_name.c_str(), cl.peak_bf16_tflops,
              cl.mem_bw_gbps, cl.memory_bytes ? gb(double(cl.memory_bytes)).c_str() : "memory unknown");
  std::printf(
      "model %s: %s params, %.2f GFLOP/token, %lld tokens/rank/step (%d micro-step%s): forward %s, backward %s\n",
      model.name.c_str(), format_count(double(model.num_params)).c_str(), model.flops_per_token / 1e9,
      (long long)model.tokens_per_rank, model.accum_steps, model.accum_steps == 1 ? "" : "s",
      strategy::format_seconds(plan.compute.forward_s).c_str(),
      strategy::format_seconds(plan.compute.backward_s).c_str());
  std::printf("memory limit %s\n\n",
              plan.memory_limit_bytes > 0 ? (gb(plan.memory_limit_bytes) + "/GPU").c_str() : "unknown (not checked)");

  const int top = int(p.get_int64_in("--top", 0, 1 << 20));
  std::printf("   %6s %-8s %-5s %-10s %4s %3s %-13s %5s %10s %10s %10s %9s %4s %5s\n", "bucket", "payload", "shape",
              "collective", "zero", "bkt", "recompute", "state", "comm", "exposed", "step", "mem/GPU", "fits", "train");
  bool any_fallback = false;
  size_t shown = 0;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const bool is_pick = int(i) == plan.pick;
    if (top > 0 && int(shown) >= top && !is_pick) continue;
    const auto& c = plan.candidates[i];
    std::printf("%s  %6s %-8s %-5s %-10s %4d %3d %-13s %5s %10s %10s %10s %9s %4s %5s\n", is_pick ? "*" : " ",
                c.bucket_name().c_str(), cost::payload_name(c.payload), c.shape_name().c_str(),
                c.collective_name().c_str(), c.zero_stage, c.num_buckets, c.recompute_name().c_str(),
                state_dtype_name(c.state), strategy::format_seconds(c.comm_s).c_str(),
                strategy::format_seconds(c.exposed_s).c_str(), strategy::format_seconds(c.step_s).c_str(),
                gb(c.memory_bytes).c_str(), c.fits ? "yes" : "no", c.runnable() ? "yes" : "no*");
    any_fallback = any_fallback || !c.runnable();
    ++shown;
  }
  if (any_fallback) std::printf("   * priced for comparison: `topotrain train` runs ZeRO-3 flat only\n");
  if (shown < plan.candidates.size()) std::printf("   (%zu more; --top 0 shows all)\n", plan.candidates.size() - shown);
  std::printf("\n");
  if (pick) {
    std::printf("pick: %s  ->  %s\n", pick->label().c_str(), overrides_for(*pick).c_str());
    std::printf("memory per GPU: %s", describe(pick->memory).c_str());
    if (pick->recompute_s > 0)
      std::printf(" | recompute adds %s/step", strategy::format_seconds(pick->recompute_s).c_str());
    std::printf("\n");
  } else {
    std::printf("pick: none fits\n");
  }
  std::printf("reason: %s\n", plan.reason.c_str());
  std::string env;
  for (const auto& e : plan.nccl_env) env += (env.empty() ? "" : " ") + e;
  std::printf("NCCL env: %s\n", env.empty() ? "(none needed)" : env.c_str());
  for (const auto& n : plan.notes) std::printf("note: %s\n", n.c_str());
  return pick ? 0 : 5;
}

}  // namespace tt
