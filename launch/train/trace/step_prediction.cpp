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
  const strategy::Candidate c =
      strategy::evaluate_candidate(cluster, spec, compute, cap_mb, payload, shape, par.zero_stage(), 0.0,
                                   strategy::CompressedAllReduce::kRing, recompute, state);
  p.forward_s = compute.forward_s;
  p.backward_s = c.compute_s - compute.forward_s;  // with recompute
  p.optimizer_s = c.optimizer_s;
  p.param_gather_s = c.gather_s;
  p.comm_s = c.comm_s + c.gather_s;  // as metrics.jsonl counts it: the gather is communication
  p.exposed_comm_s = c.exposed_s + c.gather_s;
  p.step_s = c.step_s;
  p.num_buckets = c.num_buckets;
  p.strategy = c.label();
  p.block_backward = block_backward(spec, desc);

  // The timeline's collectives: the GradReducer's own buckets, through the same overlap simulation.
  if (comm.size() > 1 && par.zero_stage() < 3 && payload == cost::Payload::kFp32) {
    const parallel::BucketCaps caps{size_t(double(par.bucket_cap_mb()) * (1 << 20)),
                                    size_t(double(par.first_bucket_cap_mb()) * (1 << 20))};
    const auto buckets = parallel::assign_buckets(spec.tensor_ranges, dtype_size(grad_dtype), caps);
    p.num_buckets = int(buckets.size());
    const double bwd_micro = p.backward_s / p.accum_steps;
    const auto ready = cost::bucket_ready_times(buckets, spec.tensor_ranges, spec.ready_fraction, bwd_micro);
    const cost::Collective collective =
        par.zero_stage() == 0 ? cost::Collective::kAllReduce : cost::Collective::kReduceScatter;
    std::vector<cost::LinkJob> jobs;
    for (size_t i = 0; i < buckets.size(); ++i) {
      const double bytes = double(buckets[i].size()) * double(dtype_size(grad_dtype));
      const cost::CollectiveCost link = cost::collective_cost(collective, shape, bytes, cluster);
      jobs.push_back({ready[i], link.transfer_s, link.latency_s, {}});
    }
    const cost::LinkSchedule schedule = cost::simulate_serial_link(jobs, bwd_micro);
    for (size_t i = 0; i < buckets.size(); ++i) {
      PredictedCollective pc;
      pc.algorithm = cost::collective_name(collective);
      pc.name = "bucket " + std::to_string(i) + " " + pc.algorithm;
      pc.bytes = buckets[i].size() * int64_t(dtype_size(grad_dtype));
      pc.ready_s = ready[i];
      pc.end_s = schedule.end_s[i];
      pc.start_s = std::max(pc.ready_s, pc.end_s - jobs[i].duration_s - jobs[i].latency_s);
      p.collectives.push_back(pc);
    }
  }
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
  constexpr int kMainLane = 1;
  trace::TraceProcess proc;
  proc.pid = 0;
  proc.name = "predicted (" + p.strategy + ")";
  proc.lanes = {{kMainLane, "main"}, {trace::kCollectiveLane, "collectives"}};
  auto ns = [](double s) { return int64_t(s * 1e9); };
  auto add = [&](const std::string& name, const char* category, double start_s, double duration_s, int lane,
                 std::string args = "") {
    proc.spans.push_back(trace::Span{name, category, ns(start_s), ns(duration_s), lane, std::move(args)});
  };
  const int accum = p.accum_steps;
  const double fwd = p.forward_s / accum, bwd = p.backward_s / accum;  // per micro-step
  const double compute_end = accum * (fwd + bwd);
  const double grad_wait = std::max(0.0, p.exposed_comm_s - p.param_gather_s);
  add("step", "step", 0, compute_end + grad_wait + p.optimizer_s + p.param_gather_s, kMainLane);
  // Blocks: backward's FLOP split; forward's blocks take the same shares of forward, in block order
  // after the (negligible) embedding lookup.
  double backward_start = 0;
  for (int m = 0; m < accum; ++m) {
    const double at = m * (fwd + bwd);
    add("forward", "forward", at, fwd, kMainLane);
    double block_at = at;
    for (size_t l = 0; l < p.block_backward.size(); ++l) {
      const auto [from, to] = p.block_backward[l];
      add("forward block " + std::to_string(l), "forward", block_at, fwd * (to - from), kMainLane);
      block_at += fwd * (to - from);
    }
    backward_start = at + fwd;
    add("backward", "backward", backward_start, bwd, kMainLane);
    for (size_t l = 0; l < p.block_backward.size(); ++l) {
      const auto [from, to] = p.block_backward[l];
      add("backward block " + std::to_string(l), "backward", backward_start + bwd * from, bwd * (to - from), kMainLane);
    }
  }
  // Collectives are timed from the start of the last micro-step's backward.
  for (size_t i = 0; i < p.collectives.size(); ++i) {
    const PredictedCollective& c = p.collectives[i];
    trace::Args args;
    args.add("seq", int64_t(i + 1)).add("bytes", c.bytes).add("algorithm", c.algorithm);
    args.add("bucket", int64_t(i)).add("ready_us", c.ready_s * 1e6);
    add(c.name, "comm", backward_start + c.start_s, c.end_s - c.start_s, trace::kCollectiveLane, args.str());
  }
  double at = compute_end;
  if (grad_wait > 0) add("gradient wait", "comm", at, grad_wait, kMainLane);
  at += grad_wait;
  add("optimizer", "optimizer", at, p.optimizer_s, kMainLane);
  at += p.optimizer_s;
  if (p.param_gather_s > 0) add("parameter all-gather", "comm", at, p.param_gather_s, kMainLane);
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
