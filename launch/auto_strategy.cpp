// Auto strategy (see auto_strategy.h). Compute speed for the planner comes from a short sgemm
// measurement on this rank: the CPU trainer's time is dominated by GEMMs.
#include "launch/auto_strategy.h"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "core/gpt2.h"
#include "core/logging.h"
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
}  // namespace

void resolve_auto_strategy(config::Config& cfg, const std::string& origin, parallel::Communicator& comm) {
  config::ParallelConfig& par = *cfg.mutable_parallel();
  if (par.strategy() != "auto") return;
  if (comm.size() == 1) {
    if (comm.rank() == 0) log_info("strategy auto: one rank, no gradient communication to plan");
  } else {
    topology::ProbeOptions probe_opts;
    probe_opts.sizes = {int64_t(64) << 10, int64_t(1) << 20, int64_t(8) << 20};
    probe_opts.iters = 3;
    const topology::Topology topo = topology::probe_topology(comm, probe_opts);

    const auto& m = cfg.model();
    const auto& t = cfg.train();
    const GPT2Config mc = GPT2Config::make(m.n_layer(), m.n_head(), m.n_embd(), m.vocab_size(), m.max_seq_len());
    strategy::ModelSpec spec = strategy::gpt2_model_spec(
        mc, t.seq_len(), int64_t(t.batch_size()) * t.seq_len() * t.grad_accum_steps(), t.grad_accum_steps());
    // GPU ranks (the NCCL backend serves only CUDA runs): compute from the probed GPU's peak in the
    // device table at the default GPU MFU (ModelSpec's zeros). CPU ranks: the measured sgemm speed,
    // the same number on every rank (the slowest rank's GEMM speed bounds the step).
    if (comm.backend() != "nccl") {
      float gemm_flops = float(measure_gemm_flops());
      comm.all_reduce(&gemm_flops, 1, DType::kF32, parallel::ReduceOp::kAvg)->wait();
      spec.peak_tflops = double(gemm_flops) / 1e12;
      spec.mfu = 0.8;  // the CPU trainer runs at ~80% of its sgemm speed (bench step)
    }

    strategy::PlanOptions opts;
    // ZeRO-3 runs on the CPU trainer only (a memory fallback: eligible when nothing else fits).
    opts.zero_stages = comm.backend() == "nccl" ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1, 2, 3};
    opts.ranks = comm.size();
    // The run's memory rehearsal budget, as `topotrain plan` takes it (0: the device's memory).
    opts.memory_budget_bytes = uint64_t(cfg.train().memory_budget_bytes());
    const strategy::StrategyPlan plan = strategy::plan_strategy(topo, spec, opts);
    // The best candidate `train` runs (Candidate::runnable; tree only where NCCL can be told to use
    // it: the MPI backend's all-reduce is a ring) that agrees with the fields the user forced.
    const std::string& forced_payload = par.grad_compression();
    const std::string& forced_shape = par.collective();
    const strategy::Candidate* pick = nullptr;
    for (const auto& c : plan.candidates) {
      const bool runs = c.runnable() && (c.shape != cost::Algorithm::kTree || comm.backend() == "nccl");
      const bool agrees = (!par.has_zero_stage() || c.zero_stage == par.zero_stage()) &&
                          (forced_payload.empty() || forced_payload == c.grad_compression_setting()) &&
                          (forced_shape.empty() || forced_shape == c.collective_setting());
      // A forced zero_stage may be 3 although a lower stage fits (eligible keeps ZeRO-3 for when none does).
      const bool allowed = c.eligible || (par.has_zero_stage() && c.fits);
      if (allowed && runs && agrees && (!pick || c.step_s < pick->step_s)) pick = &c;
    }
    if (!pick)
      throw Error(ErrorKind::kConfig, "the planner found no strategy that fits", origin,
                  "set parallel.zero_stage / bucket_cap_mb / grad_compression / collective yourself, or see "
                  "`topotrain plan`");
    if (!par.has_zero_stage()) par.set_zero_stage(pick->zero_stage);
    if (!par.has_bucket_cap_mb() && pick->zero_stage != 3)  // ZeRO-3 has no bucket cap
      par.set_bucket_cap_mb(float(pick->bucket_cap_mib()));
    if (par.grad_compression().empty()) par.set_grad_compression(pick->grad_compression_setting());
    if (par.collective().empty()) par.set_collective(pick->collective_setting());
    if (comm.rank() == 0) {
      log_info("strategy auto: ", pick->label(), " (predicted ", strategy::format_seconds(pick->step_s), "/step, ",
               strategy::format_seconds(pick->exposed_s), " exposed comm)");
      log_info("strategy auto: ", plan.picked() == pick
                                      ? plan.reason
                                      : "best implemented candidate consistent with the forced fields; "
                                        "planner's overall pick: " +
                                            (plan.picked() ? plan.picked()->label() : std::string("none")));
    }
  }
  fill_defaults(cfg);
  validate_config(cfg, origin);
}

}  // namespace tt
