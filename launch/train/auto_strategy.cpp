// Auto strategy (see auto_strategy.h). Compute speed for the planner comes from a short sgemm
// measurement on this rank: the CPU trainer's time is dominated by GEMMs.
#include "launch/train/auto_strategy.h"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "core/device_info.h"
#include "core/exec.h"
#include "core/logging.h"
#include "core/model/weights.h"
#include "launch/train/train_device.h"
#include "parallel/strategy/model_spec.h"
#include "parallel/strategy/planner.h"
#include "parallel/topology/probe.h"

namespace tt {

namespace {
// Achieved sgemm FLOP/s at a transformer-like shape (best of a few runs).
double measure_gemm_flops() {
  const int n = 512;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n, 0.0f);
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * n * n * n / best;
}
// train.matmul_precision "auto" on one rank: the planner's compute pricing of each precision on
// this rank's device (a one-GPU topology; on the CPU only the default exists: the others are
// emulated exactly and run slower than fp32).
void resolve_matmul_precision_alone(config::Config& cfg) {
  const TrainDevice device = resolve_train_device(cfg, device_facts_from_env());
  if (!device.is_cuda()) {
    cfg.mutable_train()->set_matmul_precision("default");
    log_info("strategy auto: matmul precision default (CPU ranks emulate fp8/int8 exactly, slower than fp32)");
    return;
  }
  topology::Topology topo;
  topology::Gpu* gpu = topo.add_nodes()->add_gpus();
  gpu->set_name(device_name(device.device));
  gpu->set_peak_bf16_tflops(peak_bf16_tflops(gpu->name()).value_or(0));
  const auto& t = cfg.train();
  const strategy::ModelSpec spec =
      strategy::model_spec(run_model_desc(cfg), t.seq_len(),
                           int64_t(t.batch_size()) * t.seq_len() * t.grad_accum_steps(), t.grad_accum_steps());
  const strategy::StrategyPlan plan = strategy::plan_strategy(topo, spec, plan_options(cfg, 1, false));
  const ops::MatmulPrecision pick = plan.picked() ? plan.picked()->matmul_precision : ops::MatmulPrecision::kDefault;
  cfg.mutable_train()->set_matmul_precision(ops::matmul_precision_name(pick));
  for (const auto& note : plan.notes)
    if (note.rfind("matmul precision:", 0) == 0) log_info("strategy auto: ", note);
}

}  // namespace

strategy::PlanOptions plan_options(const config::Config& cfg, int ranks, bool nccl) {
  const config::ParallelConfig& par = cfg.parallel();
  strategy::PlanOptions opts;
  opts.ranks = ranks;
  // The run's memory rehearsal budget, as `topotrain plan` takes it (0: the device's memory).
  opts.memory_budget_bytes = uint64_t(cfg.train().memory_budget_bytes());
  if (par.has_zero_stage()) opts.forced_zero_stage = par.zero_stage();
  opts.forced_grad_compression = par.grad_compression();
  opts.forced_collective = par.collective();
  opts.tree_selectable = nccl;  // the MPI backend's all-reduce is a ring
  opts.forced_recompute = cfg.train().recompute();
  if (!cfg.train().recompute().empty()) opts.forced_recompute_blocks = cfg.train().recompute_blocks();
  opts.forced_state_dtype = cfg.optimizer().state_dtype();
  opts.matmul_precisions = offered_matmul_precisions(cfg.train().matmul_precision(), "train.matmul_precision");
  return opts;
}

std::vector<ops::MatmulPrecision> offered_matmul_precisions(const std::string& value, const std::string& field) {
  using ops::MatmulPrecision;
  if (value == "auto") return {MatmulPrecision::kDefault, MatmulPrecision::kInt8, MatmulPrecision::kFp8};
  if (value.empty() || value == "default") return {MatmulPrecision::kDefault};
  if (value == "fp8") return {MatmulPrecision::kFp8};
  if (value == "int8") return {MatmulPrecision::kInt8};
  throw Error(ErrorKind::kUsage, str("unknown matmul precision '", value, "'"), field,
              "use default, fp8, int8 or auto");
}

void resolve_auto_strategy(config::Config& cfg, const std::string& origin, parallel::Communicator& comm) {
  config::ParallelConfig& par = *cfg.mutable_parallel();
  if (par.strategy() != "auto") return;
  if (comm.size() == 1) {
    log_info("strategy auto: one rank, no gradient communication to plan");
    if (cfg.train().matmul_precision() == "auto") resolve_matmul_precision_alone(cfg);
  } else {
    topology::ProbeOptions probe_opts;
    probe_opts.sizes = {int64_t(64) << 10, int64_t(1) << 20, int64_t(8) << 20};
    probe_opts.iters = 3;
    const topology::Topology topo = topology::probe_topology(comm, probe_opts);

    const auto& t = cfg.train();
    strategy::ModelSpec spec =
        strategy::model_spec(run_model_desc(cfg), t.seq_len(),
                             int64_t(t.batch_size()) * t.seq_len() * t.grad_accum_steps(), t.grad_accum_steps());
    // GPU ranks (the NCCL backend serves only CUDA runs): compute from the probed GPU's peak in the
    // device table at the default GPU MFU (ModelSpec's zeros). CPU ranks: the measured sgemm speed,
    // the same number on every rank (the slowest rank's GEMM speed bounds the step).
    const bool nccl = comm.backend() == "nccl";
    if (!nccl) {
      float gemm_flops = float(measure_gemm_flops());
      comm.all_reduce(&gemm_flops, 1, DType::kF32, parallel::ReduceOp::kAvg)->wait();
      spec.peak_tflops = double(gemm_flops) / 1e12;
      spec.mfu = 0.8;  // the CPU trainer runs at ~80% of its sgemm speed (bench step)
    }
    const strategy::StrategyPlan plan = strategy::plan_strategy(topo, spec, plan_options(cfg, comm.size(), nccl));
    const strategy::Candidate* pick = plan.picked();
    if (!pick)
      throw Error(ErrorKind::kConfig, "the planner found no strategy for this run: " + plan.reason, origin,
                  "set parallel.zero_stage / bucket_cap_mb / grad_compression / collective yourself, or see "
                  "`topotrain plan`");
    if (!par.has_zero_stage()) par.set_zero_stage(pick->zero_stage);
    if (!par.has_bucket_cap_mb() && pick->zero_stage != 3)  // ZeRO-3 has no bucket cap
      par.set_bucket_cap_mb(float(pick->bucket_cap_mib()));
    if (par.grad_compression().empty()) par.set_grad_compression(pick->grad_compression_setting());
    if (par.collective().empty()) par.set_collective(pick->collective_setting());
    if (cfg.train().recompute().empty()) {
      cfg.mutable_train()->set_recompute(recompute_name(pick->recompute.mode));
      cfg.mutable_train()->set_recompute_blocks(pick->recompute.blocks);
    }
    if (cfg.optimizer().state_dtype().empty()) cfg.mutable_optimizer()->set_state_dtype(state_dtype_name(pick->state));
    if (cfg.train().matmul_precision() == "auto")
      cfg.mutable_train()->set_matmul_precision(ops::matmul_precision_name(pick->matmul_precision));
    if (comm.rank() == 0) {
      log_info("strategy auto: ", pick->label(), " (predicted ", strategy::format_seconds(pick->step_s), "/step, ",
               strategy::format_seconds(pick->exposed_s), " exposed comm)");
      log_info("strategy auto: ", plan.reason);
      for (const auto& note : plan.notes)
        if (note.rfind("without the forced fields", 0) == 0 || note.rfind("matmul precision:", 0) == 0)
          log_info("strategy auto: ", note);
    }
  }
  fill_defaults(cfg);
  validate_config(cfg, origin);
}

}  // namespace tt
