// The strategy planner (see planner.h for the step-time and memory model and the choice rule).
#include "parallel/strategy/planner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "core/error.h"
#include "parallel/cost/overlap.h"
#include "parallel/ddp/buckets.h"
#include "parallel/ddp/sharding.h"

namespace tt::strategy {

using cost::Algorithm;
using cost::Collective;
using cost::Payload;

std::string format_seconds(double s) {
  char buf[32];
  if (!std::isfinite(s)) return "?";
  if (s >= 1.0)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  return buf;
}

namespace {
std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}
std::string num(double v, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
}  // namespace

std::string Candidate::shape_name() const {
  switch (shape) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hier";
  }
  return "?";
}

std::string Candidate::collective_name() const { return zero_stage == 0 ? "all_reduce" : "rs+ag"; }

// Planner buckets are in MB (1e6 bytes); parallel.bucket_cap_mb is in MiB (GradReducer: x 2^20).
double Candidate::bucket_cap_mib() const { return bucket_mb * 1e6 / double(1 << 20); }

const char* Candidate::grad_compression_setting() const {
  return payload == Payload::kFp32 ? "none" : payload == Payload::kBf16 ? "bf16" : payload == Payload::kInt8 ? "int8" : "fp8";
}

const char* Candidate::collective_setting() const {
  return shape == Algorithm::kHierarchical ? "hierarchical" : "flat";
}

std::vector<std::string> Candidate::config_settings() const {
  if (!runnable()) return {};
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.6g", bucket_cap_mib());
  std::vector<std::string> settings = {str("parallel.zero_stage=", zero_stage),
                                       str("parallel.grad_compression=", grad_compression_setting()),
                                       str("parallel.collective=", collective_setting())};
  if (zero_stage != 3) settings.insert(settings.begin() + 1, str("parallel.bucket_cap_mb=", mib));
  if (recompute.mode != RecomputeMode::kNone) {
    settings.push_back(str("train.recompute=", tt::recompute_name(recompute.mode)));
    settings.push_back(str("train.recompute_blocks=", recompute.blocks));
  }
  if (state != StateDType::kFp32) settings.push_back(str("optimizer.state_dtype=", state_dtype_name(state)));
  if (matmul_precision != ops::MatmulPrecision::kDefault)
    settings.push_back(str("train.matmul_precision=", ops::matmul_precision_name(matmul_precision)));
  return settings;
}

std::string Candidate::bucket_name() const { return zero_stage == 3 ? "group" : str(num(bucket_mb, 0), "MB"); }

std::string Candidate::recompute_name() const {
  if (recompute.mode == RecomputeMode::kNone) return "none";
  return str(tt::recompute_name(recompute.mode), " ", recompute.blocks);
}

std::string Candidate::label() const {
  std::string out = str(bucket_name(), " ", cost::payload_name(payload), " ", shape_name(), " ", collective_name(),
                        " zero", zero_stage);
  if (recompute.mode != RecomputeMode::kNone)
    out += str(" recompute ", tt::recompute_name(recompute.mode), "(", recompute.blocks, ")");
  if (state != StateDType::kFp32) out += str(" ", state_dtype_name(state), "-state");
  if (matmul_precision != ops::MatmulPrecision::kDefault)
    out += str(" ", ops::matmul_precision_name(matmul_precision), "-matmul");
  return out;
}

double param_gather_bytes(const ModelSpec& model, const cost::Cluster& cluster) {
  if (model.param_gather_bytes > 0) return model.param_gather_bytes;
  return cluster.has_gpus ? kParamGatherBytes : kCpuParamGatherBytes;
}

double grad_bytes(const ModelSpec& model) { return model.grad_bytes > 0 ? model.grad_bytes : 4.0; }

MemoryBreakdown candidate_memory(const cost::Cluster& cluster, const ModelSpec& model, int zero_stage, Payload payload,
                                 const Recompute& recompute, StateDType state) {
  MemoryInputs in;
  in.num_params = model.num_params;
  in.ranks = cluster.ranks;
  in.zero_stage = zero_stage;
  in.working_bytes = cluster.has_gpus ? 2 : 4;  // bf16 on GPUs, the CPU trainer's fp32
  in.state = state;
  in.payload = cluster.ranks > 1 ? payload : Payload::kFp32;
  in.zero3_window_elements = zero3_window_elements(model);
  if (model.has_desc) {
    in.desc = &model.desc;
    in.device = cluster.has_gpus ? Device::cuda(0) : Device::cpu();
    in.batch = model.micro_batch();
    in.seq_len = model.seq_len;
    in.recompute = recompute;
  }
  return rank_memory(in);
}

Candidate evaluate_candidate(const cost::Cluster& cluster, const ModelSpec& model, const ComputeTimes& compute,
                             double bucket_mb, Payload payload, Algorithm shape, int zero_stage,
                             double memory_limit_bytes, CompressedAllReduce compressed_all_reduce,
                             const Recompute& recompute, StateDType state, CandidateTimeline* timeline) {
  Candidate c;
  c.bucket_mb = bucket_mb;
  c.payload = payload;
  c.shape = shape;
  c.zero_stage = zero_stage;
  c.matmul_precision = compute.precision;
  c.runs_in_train = zero_stage <= 2 || shape != Algorithm::kHierarchical;
  const int accum = std::max(1, model.accum_steps);
  const double fwd_micro = compute.forward_s / accum, bwd_micro = compute.backward_s / accum;
  c.compute_s = compute.forward_s + compute.backward_s;

  parallel::BucketCaps caps;
  caps.cap_bytes = size_t(bucket_mb * 1e6);
  caps.first_cap_bytes = std::min(caps.cap_bytes, size_t(1) << 20);
  TT_ASSERT(zero_stage < 3 || !model.param_groups.empty(), "ModelSpec '", model.name,
            "' has no parameter groups for ZeRO-3");
  // ZeRO-3 reduces (and shards) per parameter group, whatever the cap: GradReducer's buckets are the groups.
  const double gbytes = grad_bytes(model);
  const auto buckets = zero_stage == 3        ? parallel::assign_buckets(model.param_groups, size_t(gbytes), {0, 0})
                       : !model.buckets.empty() ? model.buckets
                                                : parallel::assign_buckets(model.tensor_ranges, size_t(gbytes), caps);
  c.num_buckets = int(buckets.size());
  if (timeline) *timeline = CandidateTimeline{buckets, {}, {}, {}, {}};

  if (cluster.ranks > 1) {
    // ZeRO-1/2's reduce-scatters run per owner over contiguous shards (a bucket inside one rank's shard
    // is a reduce to it): priced per port (overlap.h). Their parameter all-gather, and every collective
    // of ZeRO-3 (which cuts each group across the ranks, parallel/ddp/sharding.h), are balanced.
    const int ports = 2 * cluster.ranks;
    const bool per_owner = (zero_stage == 1 || zero_stage == 2) && shape != Algorithm::kHierarchical;
    auto port_load = [&](int64_t begin, int64_t end) {  // of a bucket's reduction
      return per_owner ? cost::owner_port_load(parallel::split_by_shards(begin, end, model.num_params, cluster.ranks))
                       : std::vector<double>{};
    };
    const auto ready = cost::bucket_ready_times(buckets, model.tensor_ranges, model.ready_fraction, bwd_micro);
    std::vector<cost::LinkJob> jobs;
    const bool compressed_ar = zero_stage == 0 && payload != Payload::kFp32;
    const bool gather_sum =
        compressed_ar && shape != Algorithm::kHierarchical && compressed_all_reduce == CompressedAllReduce::kAllGather;
    for (size_t i = 0; i < buckets.size(); ++i) {
      const double elems = double(buckets[i].size());
      const double wire = elems * (payload == Payload::kFp32 ? gbytes : cost::payload_bytes_per_elem(payload));
      cost::CollectiveCost link;
      double codec = cost::codec_time_s(payload, buckets[i].size(), cluster);
      if (gather_sum) {  // every rank receives the other n-1 compressed buckets and decompress-adds them
        link = cost::collective_cost(Collective::kAllGather, Algorithm::kRing, wire * cluster.ranks, cluster);
        codec += (cluster.ranks - 1) * cost::decompress_add_time_s(payload, buckets[i].size(), cluster);
      } else {
        link = cost::collective_cost(c.grad_collective(), shape, wire, cluster);
        // GradReducer's reduce-scatter: the owner decompress-adds n copies of its 1/n chunk (the
        // hierarchical one does so on the node and again, for 1/g of it, across nodes).
        if (compressed_ar) {
          const double owner = cost::decompress_add_time_s(payload, buckets[i].size(), cluster);
          codec += shape == Algorithm::kHierarchical ? owner * (1.0 + 1.0 / cluster.ranks_per_node) : owner;
        }
      }
      jobs.push_back({ready[i], link.transfer_s + codec, link.latency_s, port_load(buckets[i].begin, buckets[i].end)});
      if (timeline) {
        timeline->wire_bytes.push_back(gather_sum ? wire * cluster.ranks : wire);
        timeline->phases.push_back(
            gather_sum ? cost::collective_phases(Collective::kAllGather, Algorithm::kRing, wire * cluster.ranks, cluster)
                       : cost::collective_phases(c.grad_collective(), shape, wire, cluster));
      }
    }
    const Algorithm gather_algo = shape == Algorithm::kTree ? Algorithm::kRing : shape;
    auto gather_cost = [&](int64_t begin, int64_t end) {
      return cost::collective_cost(Collective::kAllGather, gather_algo,
                                   double(end - begin) * param_gather_bytes(model, cluster), cluster);
    };
    const int comm_micros = zero_stage >= 2 ? accum : 1;
    if (zero_stage == 3) {
      std::vector<cost::LinkJob> gathers;
      for (const auto& [begin, end] : model.param_groups) {
        const auto g = gather_cost(begin, end);
        gathers.push_back({0, g.transfer_s, g.latency_s, {}});
      }
      auto seconds = [](std::vector<std::pair<int, double>> acquires, double pass_s) {
        for (auto& a : acquires) a.second *= pass_s;
        return acquires;
      };
      const auto tl = cost::simulate_zero3_step(gathers, seconds(model.forward_acquires, fwd_micro),
                                                seconds(model.backward_acquires, bwd_micro), model.resident_groups,
                                                jobs, accum, ports);
      c.comm_s = tl.busy_s;
      c.exposed_s = tl.exposed_s();
      if (timeline) timeline->zero3 = tl;
    } else {
      const auto sched = cost::simulate_serial_link(jobs, bwd_micro, ports);
      if (timeline)
        for (size_t i = 0; i < jobs.size(); ++i)
          timeline->grads.push_back({int(i), accum - 1, sched.start_s[i], sched.end_s[i]});
      c.comm_s = comm_micros * sched.busy_s;
      c.exposed_s = comm_micros * sched.exposed_s;
      c.gather_s = zero_stage >= 1 ? gather_cost(0, model.num_params).total_s() : 0.0;
    }
  }
  const double updated = zero_stage >= 1 ? double(model.num_params) / cluster.ranks : double(model.num_params);
  c.optimizer_s = model.measured_optimizer_s > 0 && model.num_params > 0
                      ? model.measured_optimizer_s * updated / double(model.num_params)
                      : updated * kOptimizerBytesPerParam / (cluster.mem_bw_gbps * 1e9);
  c.step_s = c.compute_s + c.exposed_s + c.optimizer_s + c.gather_s;
  return with_levers(c, cluster, model, compute, recompute, state, memory_limit_bytes);
}

Candidate with_levers(const Candidate& base, const cost::Cluster& cluster, const ModelSpec& model,
                      const ComputeTimes& compute, const Recompute& recompute, StateDType state,
                      double memory_limit_bytes) {
  Candidate c = base;
  c.compute_s -= base.recompute_s;
  c.step_s -= base.recompute_s + base.optimizer_s;
  // Recompute: the re-run forward FLOPs of the recomputing blocks, at the forward pass's speed.
  const int L = model.n_layer;
  const int blocks = recompute.mode == RecomputeMode::kNone          ? 0
                     : recompute.blocks <= 0 || recompute.blocks > L ? L
                                                                     : recompute.blocks;
  double per_block = 0;
  if (recompute.mode == RecomputeMode::kFull) per_block = model.block_forward_flops - model.block_down_proj_flops;
  if (recompute.mode == RecomputeMode::kSelective)
    per_block = kSelectiveRecomputeShare * model.block_forward_flops +
                (cluster.has_gpus ? 0.0 : model.block_attention_flops);  // CPU attention keeps probabilities
  const double forward_flops = model.flops_per_token / 3;
  c.recompute_s = forward_flops > 0 ? compute.forward_s * blocks * per_block / forward_flops : 0.0;
  c.recompute = {recompute.mode, blocks};
  // The optimizer pass: master weights, gradients and parameters (16 bytes) plus m and v read and written.
  c.state = state;
  auto traffic = [](StateDType s) { return 16 + 2 * state_bytes_per_element(s); };
  c.optimizer_s = base.optimizer_s * traffic(state) / traffic(base.state);
  c.compute_s += c.recompute_s;
  c.step_s += c.recompute_s + c.optimizer_s;
  c.memory = candidate_memory(cluster, model, c.zero_stage, c.payload, c.recompute, state);
  c.memory_bytes = c.memory.total();
  c.fits = memory_limit_bytes <= 0 || c.memory_bytes <= memory_limit_bytes;
  return c;
}

namespace {

// Smaller is simpler / more precise.
std::tuple<int, int, int, int, int, int, int, int, double> simplicity(const Candidate& c) {
  const int precision = c.matmul_precision == ops::MatmulPrecision::kDefault ? 0
                        : c.matmul_precision == ops::MatmulPrecision::kInt8  ? 1
                                                                             : 2;
  return {precision,
          int(c.state),
          int(c.payload),
          int(c.recompute.mode),
          c.recompute.blocks,
          c.shape == Algorithm::kHierarchical ? 1 : 0,
          c.zero_stage,
          c.shape == Algorithm::kTree ? 1 : 0,
          std::fabs(std::log(c.bucket_mb / 25.0))};
}

// The slowest link a flat collective crosses, described.
std::string bottleneck_link(const cost::Cluster& cl) {
  if (cl.nodes > 1 && (cl.ranks_per_node <= 1 || cl.inter.busbw_gbps < cl.intra.busbw_gbps))
    return "inter-node " + cl.inter.describe();
  return (cl.nodes > 1 ? "intra-node " : "") + cl.intra.describe();
}

const Candidate* best_where(const std::vector<Candidate>& cands, bool need_fit,
                            const std::function<bool(const Candidate&)>& pred) {
  const Candidate* best = nullptr;
  for (const auto& c : cands)
    if ((!need_fit || c.eligible) && pred(c) && (!best || c.step_s < best->step_s)) best = &c;
  return best;
}

// "4.1x the 2.4 s" or "32% of the 141.5 ms".
std::string compared_to(double what, double base) {
  if (what >= base) return str(num(what / base), "x the ", format_seconds(base));
  return str(num(100 * what / base, 0), "% of the ", format_seconds(base));
}

// The fewest ranks of this cluster's devices on which the leanest configuration (ZeRO-3, full
// recompute, int8 state) fits in `limit` bytes each; 0 when none up to 4096 does.
int ranks_to_fit(const cost::Cluster& cluster, const ModelSpec& model, double limit) {
  for (int n = std::max(2, cluster.ranks); n <= 4096; n = n < 8 ? n + 1 : n * 2) {
    cost::Cluster more = cluster;
    more.ranks = n;
    if (candidate_memory(more, model, 3, Payload::kFp32, {RecomputeMode::kFull, 0}, StateDType::kInt8).total() <= limit)
      return n;
  }
  return 0;
}

// How the pick fits: "full recompute of 12 blocks and int8 optimizer state because without them
// ZeRO-3 needs 31.2 GB/GPU > 21.6 GB (...); ".
std::string levers_prefix(const StrategyPlan& plan, const Candidate& p) {
  if (p.recompute.mode == RecomputeMode::kNone && p.state == StateDType::kFp32) return "";
  std::string what;
  if (p.recompute.mode != RecomputeMode::kNone)
    what = str(tt::recompute_name(p.recompute.mode), " recompute of ", p.recompute.blocks, " blocks");
  if (p.state != StateDType::kFp32)
    what += str(what.empty() ? "" : " and ", state_dtype_name(p.state), " optimizer state");
  const Candidate* plain = nullptr;
  for (const auto& c : plan.candidates)
    if (c.recompute.mode == RecomputeMode::kNone && c.state == StateDType::kFp32 && c.zero_stage == p.zero_stage &&
        (!plain || c.memory_bytes < plain->memory_bytes))
      plain = &c;
  if (plain && !plain->fits)
    return str(what, " because without them ZeRO-", p.zero_stage, " needs ", gb(plain->memory_bytes), "/GPU > ",
               gb(plan.memory_limit_bytes), " (", describe(plain->memory), "); ");
  return what + "; ";
}

std::string make_reason(const StrategyPlan& plan, const ModelSpec& model) {
  const auto& cands = plan.candidates;
  if (plan.cluster.ranks <= 1 && plan.pick >= 0)
    return levers_prefix(plan, *plan.picked()) + "single rank: no gradient communication";
  if (plan.pick < 0) {
    const bool any_fit = std::any_of(cands.begin(), cands.end(), [](const Candidate& c) { return c.eligible; });
    if (any_fit)
      return "no candidate that fits agrees with the forced fields (parallel.zero_stage / grad_compression / "
             "collective) and runs on this communicator";
    const Candidate* smallest = nullptr;
    for (const auto& c : cands)
      if (!smallest || c.memory_bytes < smallest->memory_bytes) smallest = &c;
    const int ranks = ranks_to_fit(plan.cluster, model, plan.memory_limit_bytes);
    const double per_gpu = smallest->memory_bytes / (1.0 - 0.10);
    return str("nothing fits in ", gb(plan.memory_limit_bytes), "/GPU: the smallest plan (", smallest->label(),
               ") needs ", describe(smallest->memory), "; it fits on GPUs with >= ", gb(per_gpu),
               ranks > 0 ? str(", or on ", ranks, " of these GPUs (ZeRO-3, full recompute, int8 state)")
                         : std::string(", and no number of these GPUs holds it"));
  }
  const Candidate& p = *plan.picked();
  const double bwd = plan.compute.backward_s;
  std::string prefix = levers_prefix(plan, p);
  if (p.zero_stage > 0) {
    const Candidate* lower =
        best_where(cands, false, [&](const Candidate& c) { return c.zero_stage == p.zero_stage - 1; });
    if (lower && !lower->fits)
      prefix += str("ZeRO-", p.zero_stage, " because ZeRO-", lower->zero_stage, " needs ", gb(lower->memory_bytes),
                    "/GPU > ", gb(plan.memory_limit_bytes), " available; ");
    else
      prefix += str("ZeRO-", p.zero_stage, ": ");
  }
  const std::string coll = p.zero_stage == 0 ? "all-reduce" : "reduce-scatter";
  if (p.payload != Payload::kFp32) {
    const Candidate* ref = best_where(
        cands, true, [&](const Candidate& c) { return c.payload == Payload::kFp32 && c.zero_stage == p.zero_stage; });
    if (!ref) ref = best_where(cands, false, [&](const Candidate& c) { return c.payload == Payload::kFp32; });
    return prefix + str(cost::payload_name(p.payload), ": ", bottleneck_link(plan.cluster), " makes fp32 ", coll, " ",
                        format_seconds(ref->comm_s), "/step, ", compared_to(ref->comm_s, bwd), " backward (",
                        format_seconds(ref->exposed_s), " exposed); ", cost::payload_name(p.payload), " exposes ",
                        format_seconds(p.exposed_s));
  }
  if (p.shape == Algorithm::kHierarchical) {
    const Candidate* flat = best_where(cands, false, [&](const Candidate& c) {
      return c.shape != Algorithm::kHierarchical && c.payload == p.payload && c.zero_stage == p.zero_stage;
    });
    return prefix + str("hierarchical: inter-node ", plan.cluster.inter.describe(), " vs intra-node ",
                        plan.cluster.intra.describe(), "; sending 1/", plan.cluster.ranks_per_node,
                        " of the gradients per rank across nodes cuts ", coll, " from ",
                        format_seconds(flat ? flat->comm_s : NAN), " to ", format_seconds(p.comm_s), "/step");
  }
  const double hidden = p.comm_s > 0 ? std::max(0.0, 1.0 - p.exposed_s / p.comm_s) : 1.0;
  return prefix + str("fp32 ", p.shape_name(), " ", coll, ": ", bottleneck_link(plan.cluster), " moves the ",
                      gb(4.0 * double(plan.model_params)), " of gradients in ", format_seconds(p.comm_s), "/step, ",
                      num(100 * hidden, 0), "% hidden behind the ", format_seconds(bwd), " backward (",
                      format_seconds(p.exposed_s), " exposed)");
}

// The candidate `base` with every optimizer state and, for each state where it does not fit as is,
// each recompute mode over the fewest blocks that make it fit (all blocks when none do).
void add_memory_levers(StrategyPlan& plan, const Candidate& base, const cost::Cluster& cluster, const ModelSpec& model,
                       const PlanOptions& options, const ComputeTimes& compute) {
  const double limit = plan.memory_limit_bytes;
  auto offered = [](const auto& list, auto value) { return std::find(list.begin(), list.end(), value) != list.end(); };
  for (StateDType state : options.state_dtypes) {
    const Candidate keep = with_levers(base, cluster, model, compute, {}, state, limit);
    if (offered(options.recompute_modes, RecomputeMode::kNone)) plan.candidates.push_back(keep);
    if (!model.has_desc || model.n_layer < 2) continue;
    for (RecomputeMode mode : options.recompute_modes) {
      if (mode == RecomputeMode::kNone) continue;
      auto at = [&](int blocks) {
        return with_levers(base, cluster, model, compute, {mode, blocks}, state, limit);
      };
      const bool forced = options.forced_recompute == tt::recompute_name(mode);
      if (forced && options.forced_recompute_blocks > 0) {  // the config's block count, as it is
        plan.candidates.push_back(at(std::min(options.forced_recompute_blocks, model.n_layer)));
        continue;
      }
      if (keep.fits) {  // recompute only slows a plan that fits; a forced mode is offered over all blocks
        if (forced) plan.candidates.push_back(at(model.n_layer));
        continue;
      }
      // Memory falls as blocks grow (N blocks save N-1 blocks' activations): the fewest that fit.
      int lo = 2, hi = model.n_layer;
      if (!at(hi).fits) {
        plan.candidates.push_back(at(hi));
        continue;
      }
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (at(mid).fits)
          hi = mid;
        else
          lo = mid + 1;
      }
      plan.candidates.push_back(at(lo));
    }
  }
}

// "matmul precision: default 45.1 ms/step, int8 38.0 ms/step (-16%), fp8 35.2 ms/step (-22%): fp8 pays"
// from the fastest allowed candidate of each precision offered.
std::string precision_note(const StrategyPlan& plan, const PlanOptions& options,
                           const std::vector<ops::MatmulPrecision>& available) {
  std::string out = "matmul precision:";
  double base = 0;
  for (ops::MatmulPrecision precision : options.matmul_precisions) {
    const char* name = ops::matmul_precision_name(precision);
    if (std::find(available.begin(), available.end(), precision) == available.end()) {
      out += str(" ", name, " not available on ", plan.cluster.device_name, ";");
      continue;
    }
    const Candidate* best = best_where(plan.candidates, true, [&](const Candidate& c) {
      return c.allowed && c.matmul_precision == precision;
    });
    if (!best) continue;
    if (precision == ops::MatmulPrecision::kDefault) base = best->step_s;
    out += str(" ", name, " ", format_seconds(best->step_s), "/step");
    if (precision != ops::MatmulPrecision::kDefault && base > 0)
      out += str(" (", best->step_s <= base ? "-" : "+", num(100 * std::fabs(1 - best->step_s / base), 0), "%)");
    out += ",";
  }
  if (!out.empty() && (out.back() == ',' || out.back() == ';')) out.pop_back();
  const Candidate* p = plan.picked();
  if (!p) return out;
  if (p->matmul_precision != ops::MatmulPrecision::kDefault)
    return out + str(": ", ops::matmul_precision_name(p->matmul_precision), " pays (compute-bound step)");
  return out + str(": default kept (the gain, if any, is within ", num(100 * options.tie_tolerance, 0),
                   "%: the step is bound by communication, memory traffic or small GEMMs)");
}

}  // namespace

StrategyPlan plan_strategy(const cost::Cluster& cluster, const ModelSpec& model, const PlanOptions& options) {
  if (model.num_params <= 0 || model.tensor_ranges.empty() ||
      (model.tokens_per_rank <= 0 && model.measured_backward_s <= 0))
    throw Error(ErrorKind::kConfig, "model spec has no parameters or no tokens per rank", model.name,
                "give the model a layout and a batch (tokens per step per rank > 0)");
  StrategyPlan plan;
  plan.cluster = cluster;
  plan.model_params = model.num_params;
  plan.compute = compute_times(model, cluster);
  plan.memory_limit_bytes = options.memory_budget_bytes > 0
                                ? double(options.memory_budget_bytes)
                                : double(cluster.memory_bytes) * (1.0 - options.memory_reserve);

  const bool single = cluster.ranks <= 1;
  // One rank communicates nothing: one bucket cap (the closest to 25 MB) stands for all.
  const double single_mb = *std::min_element(
      options.bucket_mb.begin(), options.bucket_mb.end(),
      [](double a, double b) { return std::fabs(std::log(a / 25.0)) < std::fabs(std::log(b / 25.0)); });
  const std::vector<ops::MatmulPrecision> available = available_precisions(cluster);
  std::vector<ops::MatmulPrecision> priced;  // offered and available; the default when none is
  for (ops::MatmulPrecision precision : options.matmul_precisions)
    if (std::find(available.begin(), available.end(), precision) != available.end()) priced.push_back(precision);
  if (priced.empty()) priced.push_back(ops::MatmulPrecision::kDefault);
  for (ops::MatmulPrecision precision : priced) {
    const ComputeTimes compute = compute_times(model, cluster, precision);
  for (double mb : options.bucket_mb)
    for (Payload payload : options.payloads)
      for (int zero : options.zero_stages) {
        if (single && (payload != Payload::kFp32 || zero != 0 || mb != single_mb)) continue;
        // GradReducer compresses the all-reduce only (parallel.grad_compression is zero_stage 0 only).
        if (payload != Payload::kFp32 && zero != 0) continue;
        if (zero == 3 && mb != options.bucket_mb.front()) continue;  // ZeRO-3 has no bucket cap
        // Compressed all-reduce runs as GradReducer's all_to_all + all_gather (either pricing): no tree.
        std::vector<Algorithm> shapes{Algorithm::kRing};
        // Tree: NCCL's, selected by NCCL_ALGO=Tree on GPU ranks; the MPI backend's all-reduce is a ring.
        if (!single && zero == 0 && payload == Payload::kFp32 && cluster.has_gpus) shapes.push_back(Algorithm::kTree);
        // Hierarchical: GradReducer's all-reduce (parallel.collective "hierarchical", every payload);
        // ZeRO-3 keeps it for comparison (priced only); ZeRO-1/2 reduce-scatter flat.
        if (cluster.nodes > 1 && cluster.ranks_per_node > 1 && (zero == 0 || zero == 3))
          shapes.push_back(Algorithm::kHierarchical);
        for (Algorithm shape : shapes) {
          const Candidate base = evaluate_candidate(cluster, model, compute, mb, payload, shape, zero,
                                                    plan.memory_limit_bytes, options.compressed_all_reduce);
          add_memory_levers(plan, base, cluster, model, options, compute);
        }
      }
  }
  TT_ASSERT(!plan.candidates.empty(), "the planner's options produced no candidates");
  bool low_stage_fits = false;
  for (const auto& c : plan.candidates) low_stage_fits = low_stage_fits || (c.fits && c.zero_stage < 3);
  for (auto& c : plan.candidates) c.eligible = c.fits && (c.zero_stage < 3 || !low_stage_fits);

  for (auto& c : plan.candidates) {
    const bool forced_stage = options.forced_zero_stage >= 0;
    const bool agrees =
        (!forced_stage || c.zero_stage == options.forced_zero_stage) &&
        (options.forced_grad_compression.empty() || options.forced_grad_compression == c.grad_compression_setting()) &&
        (options.forced_collective.empty() || options.forced_collective == c.collective_setting()) &&
        (options.forced_recompute.empty() || options.forced_recompute == tt::recompute_name(c.recompute.mode)) &&
        (options.forced_recompute_blocks < 0 || c.recompute.mode == RecomputeMode::kNone ||
         options.forced_recompute_blocks == c.recompute.blocks ||
         (options.forced_recompute_blocks == 0 && c.recompute.blocks == model.n_layer)) &&
        (options.forced_state_dtype.empty() || options.forced_state_dtype == state_dtype_name(c.state));
    // A forced zero_stage may be 3 although a lower stage fits (eligible keeps ZeRO-3 for when none does).
    const bool may_take = c.eligible || (forced_stage && c.fits);
    c.allowed = may_take && agrees && c.runnable() && (c.shape != Algorithm::kTree || options.tree_selectable);
  }
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.allowed != b.allowed) return a.allowed;
    if (a.eligible != b.eligible) return a.eligible;
    if (a.fits != b.fits) return a.fits;
    if (a.step_s != b.step_s) return a.step_s < b.step_s;
    return simplicity(a) < simplicity(b);
  });
  if (plan.candidates.front().allowed) {
    const double limit = plan.candidates.front().step_s * (1.0 + options.tie_tolerance);
    plan.pick = 0;
    for (size_t i = 1; i < plan.candidates.size(); ++i) {
      const Candidate& c = plan.candidates[i];
      if (!c.allowed || c.step_s > limit) break;
      if (simplicity(c) < simplicity(plan.candidates[size_t(plan.pick)])) plan.pick = int(i);
    }
  }
  if (plan.picked()) plan.compute = compute_times(model, cluster, plan.picked()->matmul_precision);
  plan.reason = make_reason(plan, model);

  // NCCL hints and caveats.
  const Candidate* p = plan.picked();
  if (cluster.has_gpus && cluster.ranks_per_node > 1 && !cluster.p2p_verified)
    plan.nccl_env.push_back("NCCL_P2P_DISABLE=1");
  if (p && !single && p->zero_stage == 0 && p->shape != Algorithm::kHierarchical && cluster.has_gpus) {
    const Algorithm other = p->shape == Algorithm::kRing ? Algorithm::kTree : Algorithm::kRing;
    for (const auto& c : plan.candidates)
      if (c.bucket_mb == p->bucket_mb && c.payload == p->payload && c.zero_stage == 0 && c.shape == other &&
          std::fabs(c.step_s - p->step_s) > options.tie_tolerance * p->step_s)
        plan.nccl_env.push_back(p->shape == Algorithm::kRing ? "NCCL_ALGO=Ring" : "NCCL_ALGO=Tree");
  }
  if (options.matmul_precisions.size() > 1) plan.notes.push_back(precision_note(plan, options, available));
  if (!cluster.has_gpus)
    plan.notes.push_back("CPU ranks: the MPI backend runs the collectives; NCCL hints do not apply");
  if (cluster.inter_extrapolated)
    plan.notes.push_back(str("nodes beyond the topology are joined by an assumed ",
                             num(cost::kDefaultInterNodeLineGbps * 8, 0), " Gb/s network (busbw ",
                             cost::kDefaultInterNodeGbps, " GB/s, ", cost::kDefaultInterNodeLatencyUs, " us)"));
  if (!cluster.intra.from_busbw && cluster.ranks_per_node > 1)
    plan.notes.push_back("intra-node bandwidth is nominal (no busbw in the topology): predictions are optimistic");
  if (plan.memory_limit_bytes <= 0)
    plan.notes.push_back("device memory unknown: memory fit not checked (--memory-budget)");
  const bool any_zero3 =
      std::any_of(plan.candidates.begin(), plan.candidates.end(), [](const Candidate& c) { return c.zero_stage == 3; });
  if (low_stage_fits && any_zero3)
    plan.notes.push_back("ZeRO-3 candidates are a memory fallback, considered only when no ZeRO-0/1/2 candidate fits");
  const bool constrained = options.forced_zero_stage >= 0 || !options.forced_grad_compression.empty() ||
                           !options.forced_collective.empty() || !options.tree_selectable ||
                           !options.forced_recompute.empty() || !options.forced_state_dtype.empty();
  if (constrained) {
    const Candidate* best = nullptr;  // what the pick would be without the run's constraints
    for (const auto& c : plan.candidates)
      if (c.eligible && c.runnable() && (!best || c.step_s < best->step_s)) best = &c;
    if (best && p && best->step_s < p->step_s * (1.0 - options.tie_tolerance))
      plan.notes.push_back(str("without the forced fields the pick would be ", best->label(), " (",
                               format_seconds(best->step_s), "/step)"));
  }
  if (p && p->payload != Payload::kFp32 && p->zero_stage == 0 && p->shape != Algorithm::kHierarchical &&
      options.compressed_all_reduce == CompressedAllReduce::kRing) {
    const Candidate whole_buckets =
        evaluate_candidate(cluster, model, plan.compute, p->bucket_mb, p->payload, Algorithm::kRing, 0,
                           plan.memory_limit_bytes, CompressedAllReduce::kAllGather);
    plan.notes.push_back(
        str("compressed all-reduce priced as GradReducer runs it: an all_to_all of compressed chunks, "
            "then GradReducer all-gathers the re-compressed reduced chunks (2(n-1)/n of the "
            "compressed bucket per rank); all-gathering whole compressed buckets would predict ",
            format_seconds(whole_buckets.step_s), "/step (", format_seconds(whole_buckets.exposed_s),
            " exposed; --compressed-all-reduce allgather)"));
  }
  if (p && p->shape == Algorithm::kHierarchical)
    plan.notes.push_back(
        str("hierarchical all-reduce: GradReducer splits the ranks into per-node and cross-node communicators ",
            "(parallel.collective=hierarchical; ", cluster.nodes, " nodes x ", cluster.ranks_per_node, " ranks)"));
  if (!single && std::any_of(plan.candidates.begin(), plan.candidates.end(),
                             [](const Candidate& c) { return c.payload != Payload::kFp32; })) {
    const cost::CodecFigures& codec = cluster.codec[int(Payload::kInt8)];
    plan.notes.push_back(codec.measured()
                             ? str("codec priced from the probe's measurement on ", cluster.device_name,
                                   ": int8+ef compress ", num(codec.compress_gbps, 2), " GB/s, decompress-add ",
                                   num(codec.decompress_add_gbps, 2), " GB/s of fp32 gradients")
                             : str("codec priced from memory bandwidth (", num(cluster.mem_bw_gbps, 0),
                                   " GB/s; no codec measurement in the topology)"));
  }
  return plan;
}

StrategyPlan plan_strategy(const topology::Topology& topo, const ModelSpec& model, const PlanOptions& options) {
  return plan_strategy(cost::cluster_of(topo, options.ranks), model, options);
}

}  // namespace tt::strategy
