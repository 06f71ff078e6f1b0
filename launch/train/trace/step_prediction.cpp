// The cost model's prediction of a step (see step_prediction.h).
#include "launch/train/trace/step_prediction.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/logging.h"
#include "core/model/activation_plan.h"
#include "core/model/param_layout.h"
#include "core/trace_events.h"
#include "optim/adamw.h"
#include "parallel/cost/collective_cost.h"
#include "parallel/cost/overlap.h"
#include "parallel/ddp/buckets.h"
#include "parallel/strategy/model_spec.h"
#include "parallel/strategy/planner.h"
#include "parallel/topology/probe.h"

namespace tt {

namespace {
using nlohmann::json;

// Achieved single-call sgemm FLOP/s at a transformer-like shape (best of a few): the CPU trainer's
// speed is its GEMMs'.
double measured_gemm_flops() {
  const int n = 384;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n, 0.0f);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * n * n * n / best;
}

cost::Payload payload_of(const std::string& compression) {
  if (compression == "bf16") return cost::Payload::kBf16;
  if (compression == "int8") return cost::Payload::kInt8;
  if (compression == "fp8") return cost::Payload::kFp8;
  return cost::Payload::kFp32;
}

// Each block's backward as [start, end) fractions of backward (ModelSpec's FLOP split): a block
// (parameter group 1 + l) ends when its tensors are final, and starts when the block after it ended.
std::vector<std::pair<double, double>> block_backward(const strategy::ModelSpec& spec, const ModelDesc& desc) {
  const ModelLayout layout = model_layout(desc);
  const auto groups = group_ranges(layout.groups);
  const int L = desc.n_layer;
  std::vector<double> ends(size_t(L), 0.0);
  for (int l = 0; l < L && size_t(1 + l) < groups.size(); ++l) {
    const auto [begin, end] = groups[size_t(1 + l)];
    for (size_t t = 0; t < spec.tensor_ranges.size(); ++t)
      if (spec.tensor_ranges[t].first >= begin && spec.tensor_ranges[t].second <= end)
        ends[size_t(l)] = std::max(ends[size_t(l)], spec.ready_fraction[t]);
  }
  std::vector<std::pair<double, double>> spans;
  for (int l = 0; l < L; ++l) {
    const double end = ends[size_t(l)];
    const double last_length = L >= 2 ? ends[size_t(L - 2)] - ends[size_t(L - 1)] : end;
    const double start = l + 1 < L ? ends[size_t(l + 1)] : std::max(0.0, end - last_length);
    spans.push_back({start, end});
  }
  return spans;
}

// A bucket's collective as GradReducer issues it: (algorithm, share of the bucket's time) per
// phase, from the cost model's phases (the compressed all-reduce's reduce-scatter and all-gather
// halves are its all_to_all and all_gather).
std::vector<std::pair<std::string, double>> reducer_phases(const std::vector<cost::CollectivePhase>& phases,
                                                           int zero_stage, bool compressed, bool hierarchical) {
  std::vector<std::pair<std::string, double>> out;
  auto add = [&](std::string name, double seconds) { out.push_back({std::move(name), seconds}); };
  if (!hierarchical) {
    const double t = phases.empty() ? 1.0 : phases[0].cost.total_s();
    if (zero_stage > 0)
      add("reduce_scatter", t);
    else if (!compressed)
      add("all_reduce", t);
    else
      add("all_to_all", t / 2), add("all_gather", t / 2);
  } else {
    // Intra-node reduce-scatter, the cross-node all-reduce, the intra-node all-gather (one node: the
    // flat ring, its halves within the node and nothing across).
    double rs = 0, cross = 0, ag = 0;
    if (phases.size() == 3) {
      rs = phases[0].cost.total_s(), cross = phases[1].cost.total_s(), ag = phases[2].cost.total_s();
    } else if (!phases.empty()) {
      rs = ag = phases[0].cost.total_s() / 2;
    }
    if (!compressed) {
      add("node reduce_scatter", rs), add("cross-node all_reduce", cross), add("node all_gather", ag);
    } else {
      add("node all_to_all", rs), add("cross-node all_to_all", cross / 2), add("cross-node all_gather", cross / 2);
      add("node all_gather", ag);
    }
  }
  double total = 0;
  for (const auto& p : out) total += p.second;
  for (auto& p : out) p.second = total > 0 ? p.second / total : 1.0 / double(out.size());
  return out;
}

// Appends a span of the predicted step (seconds from its start).
void add_span(std::vector<trace::Span>& spans, std::string name, const char* category, double start_s, double end_s,
              int lane, std::string args = "") {
  spans.push_back(trace::Span{std::move(name), category, int64_t(start_s * 1e9),
                              int64_t(std::max(0.0, end_s - start_s) * 1e9), lane, std::move(args)});
}

// The collectives lane: bucket i's phases over its simulated [start, end], offset by `at`.
void add_bucket(std::vector<trace::Span>& spans, size_t i, const std::vector<std::pair<std::string, double>>& phases,
                double wire_bytes, int64_t grad_bytes, double start_s, double end_s, double at, int64_t& seq) {
  double t = start_s;
  for (const auto& [algorithm, share] : phases) {
    const double end = t + share * (end_s - start_s);
    trace::Args args;
    args.add("seq", ++seq).add("bytes", grad_bytes).add("wire_bytes", int64_t(wire_bytes));
    args.add("algorithm", algorithm).add("bucket", int64_t(i));
    add_span(spans, "bucket " + std::to_string(i) + " " + algorithm, "comm", at + t, at + end, trace::kCollectiveLane,
             args.str());
    t = end;
  }
}

// The compute after a parameter group's acquire: "forward block 3"; group 0 is the embedding lookup
// when forward starts with it, else the tied LM head; the last group the final norm (and an untied
// head).
std::string group_span_name(const char* pass, int group, bool first, const ModelDesc& d) {
  if (group >= 1 && group <= d.n_layer) return str(pass, " block ", group - 1);
  if (group == 0) return str(pass, first && std::string(pass) == "forward" ? " embeddings" : " head");
  return str(pass, d.tied_head ? " final norm" : " final norm and head");
}
}  // namespace

StepPrediction predict_step(const config::Config& cfg, const ModelDesc& desc, DType grad_dtype,
                            parallel::Communicator& comm) {
  const auto& t = cfg.train();
  const auto& par = cfg.parallel();
  StepPrediction p;
  p.ranks = comm.size();
  p.accum_steps = std::max(1, t.grad_accum_steps());
  p.tokens_per_rank = int64_t(t.batch_size()) * t.seq_len() * t.grad_accum_steps();

  // The link: a short all-reduce probe (every rank, same options).
  topology::ProbeOptions probe;
  probe.sizes = {int64_t(64) << 10, int64_t(1) << 20};
  probe.ops = {"all_reduce"};
  probe.iters = 2;
  probe.codec_elements = 0;
  probe.gpu_copy_bytes = int64_t(8) << 20;
  probe.gpu_copy_iters = 1;
  const topology::Topology topo = topology::probe_topology(comm, probe);
  const cost::Cluster cluster = cost::cluster_of(topo, comm.size());
  p.device = cluster.device_name;
  p.busbw_gbps = cluster.intra.busbw_gbps;
  p.latency_us = cluster.intra.latency_us;
  p.link = cluster.intra.describe();

  strategy::ModelSpec spec = strategy::model_spec(desc, t.seq_len(), p.tokens_per_rank, t.grad_accum_steps());
  if (!cluster.has_gpus) {
    spec.peak_tflops = measured_gemm_flops() / 1e12;
    spec.mfu = 0.8;  // the CPU trainer runs at about 80% of its sgemm speed (as strategy auto assumes)
    p.compute_source = "sgemm measured at start-up on rank " + std::to_string(comm.rank()) + " x mfu 0.8";
  } else {
    p.compute_source = "device table peak x default GPU mfu";
  }
  const strategy::ComputeTimes compute = strategy::compute_times(spec, cluster);
  p.compute_tflops = spec.peak_tflops > 0 ? spec.peak_tflops : cluster.peak_bf16_tflops;
  p.mfu = spec.mfu > 0 ? spec.mfu : strategy::kDefaultGpuMfu;

  const cost::Payload payload = payload_of(par.grad_compression());
  const cost::Algorithm shape =
      par.collective() == "hierarchical" ? cost::Algorithm::kHierarchical : cost::Algorithm::kRing;
  const Recompute recompute{t.recompute().empty() ? RecomputeMode::kNone : parse_recompute(t.recompute()),
                            t.recompute_blocks()};
  const StateDType state =
      cfg.optimizer().state_dtype().empty() ? StateDType::kFp32 : parse_state_dtype(cfg.optimizer().state_dtype());
  const double cap_mb = double(par.bucket_cap_mb()) * double(1 << 20) / 1e6;
  // The GradReducer's own buckets and gradient dtype (its caps are MiB of that dtype).
  spec.grad_bytes = double(dtype_size(grad_dtype));
  spec.param_gather_bytes = double(dtype_size(grad_dtype));
  const parallel::BucketCaps caps{size_t(double(par.bucket_cap_mb()) * (1 << 20)),
                                  size_t(double(par.first_bucket_cap_mb()) * (1 << 20))};
  spec.buckets = parallel::assign_buckets(spec.tensor_ranges, dtype_size(grad_dtype), caps);
  strategy::CandidateTimeline tl;
  const strategy::Candidate c =
      strategy::evaluate_candidate(cluster, spec, compute, cap_mb, payload, shape, par.zero_stage(), 0.0,
                                   strategy::CompressedAllReduce::kRing, recompute, state, &tl);
  p.forward_s = compute.forward_s;
  p.backward_s = c.compute_s - compute.forward_s;  // with recompute
  p.optimizer_s = c.optimizer_s;
  p.param_gather_s = c.gather_s;
  p.comm_s = c.comm_s + c.gather_s;  // as metrics.jsonl counts it: the gather is communication
  p.exposed_comm_s = c.exposed_s + c.gather_s;
  p.step_s = c.step_s;
  p.num_buckets = c.num_buckets;
  p.strategy = c.label();

  // The timeline of the step.
  constexpr int kMain = StepPrediction::kMainLane;
  std::vector<trace::Span>& out = p.timeline;
  const int accum = p.accum_steps;
  const bool zero3 = par.zero_stage() == 3;
  const bool compressed = payload != cost::Payload::kFp32;
  const bool hierarchical = shape == cost::Algorithm::kHierarchical;
  const double esize = double(dtype_size(grad_dtype));
  int64_t seq = 0;
  double compute_end = 0;
  if (!zero3) {
    // Blocks: backward's FLOP split; forward's blocks take the same shares of forward, in block
    // order after the (negligible) embedding lookup.
    const auto blocks = block_backward(spec, desc);
    const double fwd = p.forward_s / accum, bwd = p.backward_s / accum;  // per micro-step
    double backward_start = 0;
    for (int m = 0; m < accum; ++m) {
      const double at = m * (fwd + bwd);
      add_span(out, "forward", "forward", at, at + fwd, kMain);
      double block_at = at;
      for (size_t l = 0; l < blocks.size(); ++l) {
        const double length = fwd * (blocks[l].second - blocks[l].first);
        add_span(out, "forward block " + std::to_string(l), "forward", block_at, block_at + length, kMain);
        block_at += length;
      }
      backward_start = at + fwd;
      add_span(out, "backward", "backward", backward_start, backward_start + bwd, kMain);
      for (size_t l = 0; l < blocks.size(); ++l)
        add_span(out, "backward block " + std::to_string(l), "backward", backward_start + bwd * blocks[l].first,
                 backward_start + bwd * blocks[l].second, kMain);
    }
    compute_end = accum * (fwd + bwd);
    // The last micro-step's collectives (ZeRO-0/1 communicate only then), timed from its backward.
    for (const cost::TimelineSpan& g : tl.grads) {
      const size_t i = size_t(g.index);
      add_bucket(out, i, reducer_phases(tl.phases[i], par.zero_stage(), compressed, hierarchical), tl.wire_bytes[i],
                 int64_t(double(tl.buckets[i].size()) * esize), g.start_s, g.end_s, backward_start, seq);
    }
  } else {
    // ZeRO-3: compute where the simulation placed it (after each group's gather), its gathers, and
    // every micro-step's reduce-scatters.
    for (const auto* pass : {&tl.zero3.forward, &tl.zero3.backward}) {
      const bool forward = pass == &tl.zero3.forward;
      const char* name = forward ? "forward" : "backward";
      for (int m = 0; m < accum; ++m) {
        double from = -1, to = 0;
        for (const cost::TimelineSpan& s : *pass) {
          if (s.micro != m) continue;
          add_span(out, group_span_name(name, s.index, from < 0, desc), name, s.start_s, s.end_s, kMain);
          if (from < 0) from = s.start_s;
          to = s.end_s;
        }
        if (from >= 0) add_span(out, name, name, from, to, kMain);
      }
    }
    for (const cost::TimelineSpan& g : tl.zero3.gathers) {
      trace::Args args;
      args.add("group", int64_t(g.index)).add("micro_step", int64_t(g.micro));
      add_span(out, str("gather group ", g.index), "comm", g.start_s, g.end_s, StepPrediction::kGatherLane, args.str());
    }
    for (const cost::TimelineSpan& g : tl.zero3.grads) {
      const size_t i = size_t(g.index);
      add_bucket(out, i, {{"reduce_scatter", 1.0}}, tl.wire_bytes[i], int64_t(double(tl.buckets[i].size()) * esize),
                 g.start_s, g.end_s, 0.0, seq);
    }
    compute_end = tl.zero3.wall_s;
  }
  // After compute: the exposed gradient wait (ZeRO-3: already inside the simulated wall time), the
  // optimizer and the ZeRO-1/2 parameter all-gather.
  double at = compute_end;
  const double grad_wait = zero3 ? 0.0 : std::max(0.0, p.exposed_comm_s - p.param_gather_s);
  if (grad_wait > 0) add_span(out, "gradient wait", "comm", at, at + grad_wait, kMain);
  at += grad_wait;
  add_span(out, "optimizer", "optimizer", at, at + p.optimizer_s, kMain);
  at += p.optimizer_s;
  if (p.param_gather_s > 0) add_span(out, "parameter all-gather", "comm", at, at + p.param_gather_s, kMain);
  add_span(out, "step", "step", 0, at + p.param_gather_s, kMain);
  return p;
}

std::string prediction_json(const StepPrediction& p) {
  const json inputs{{"ranks", p.ranks},
                    {"device", p.device},
                    {"link", p.link},
                    {"link_busbw_gbps", p.busbw_gbps},
                    {"link_latency_us", p.latency_us},
                    {"link_source", "all_reduce probe at start-up (64 KiB, 1 MiB)"},
                    {"compute_tflops", p.compute_tflops},
                    {"mfu", p.mfu},
                    {"compute_source", p.compute_source},
                    {"tokens_per_rank", p.tokens_per_rank},
                    {"strategy", p.strategy}};
  const json doc{{"what", "predicted seconds per optimizer step (planner's cost model), to compare with metrics.jsonl"},
                 {"step_s", p.step_s},
                 {"forward_s", p.forward_s},
                 {"backward_s", p.backward_s},
                 {"optimizer_s", p.optimizer_s},
                 {"param_gather_s", p.param_gather_s},
                 {"comm_s", p.comm_s},
                 {"exposed_comm_s", p.exposed_comm_s},
                 {"buckets", p.num_buckets},
                 {"inputs", inputs}};
  return doc.dump(2) + "\n";
}

std::string predicted_trace_json(const StepPrediction& p) {
  trace::TraceProcess proc;
  proc.pid = 0;
  proc.name = "predicted (" + p.strategy + ")";
  proc.lanes = {{StepPrediction::kMainLane, "main"},
                {trace::kCollectiveLane, "collectives"},
                {StepPrediction::kGatherLane, "parameter gathers"}};
  proc.spans = p.timeline;
  const json other{{"what", "the cost model's timeline of one optimizer step (see prediction.json)"},
                   {"step_s", p.step_s},
                   {"strategy", p.strategy}};
  trace::spread_overlapping(proc, trace::kCollectiveLane);
  return trace::chrome_trace_json({proc}, other.dump());
}

void write_step_prediction(const config::Config& cfg, const ModelDesc& desc, DType grad_dtype,
                           parallel::Communicator& comm, const std::string& prediction_path,
                           const std::string& predicted_trace_path) {
  StepPrediction p;
  try {
    p = predict_step(cfg, desc, grad_dtype, comm);
  } catch (const Error& e) {
    if (comm.rank() == 0) log_warn("no step prediction (", e.what(), ")");
    return;
  }
  if (comm.rank() != 0) return;
  try {
    atomic_write_string(prediction_path, prediction_json(p));
    if (predicted_trace_path.empty()) return;
    ensure_dir(std::filesystem::path(predicted_trace_path).parent_path().string());
    atomic_write_string(predicted_trace_path, predicted_trace_json(p));
    log_info("predicted timeline of a step: ", predicted_trace_path);
  } catch (const Error& e) {  // informational files: the run goes on without them
    log_warn("cannot write the step prediction (", e.what(), ")");
  }
}

}  // namespace tt
