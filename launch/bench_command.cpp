// `topotrain bench step`: times whole optimizer steps of the configured model and prints tokens/s,
// achieved model FLOP/s and a per-phase table (data, forward, backward, optimizer). On a GPU the
// phases are device times between CUDA events, and the line also gives MFU against the GPU's dense
// bf16 peak (core/device_info; "n/a" for a GPU missing from the table) and the device memory.
// `--recompute none,selective,full` runs the benchmark once per activation recompute mode and adds
// a table of step time, its overhead over the first mode, and peak and predicted memory.
// Benchmarks print tables; nothing here is asserted by tests.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/config.h"
#include "core/device_info.h"
#include "core/logging.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/tokenizer_command.h"
#include "launch/train/auto_strategy.h"
#include "launch/train/process_group.h"
#include "launch/train/trace/step_tracer.h"
#include "launch/train/trainer.h"

namespace tt {

int bench_comm(const Args& args);  // launch/bench_comm.cpp

namespace {
struct BenchResult {
  double step_s = 0, forward_s = 0, backward_s = 0, peak_bytes = 0, predicted_bytes = 0;
  int n_layer = 0;
};
// One benchmark of cfg: prints its tables on rank 0 and fills `result` (when not null).
// trace_file: where the measured steps' trace goes ("" = none).
int bench_one(const ArgParser& p, config::Config cfg, parallel::Communicator& comm, int steps, int warmup,
              const std::string& trace_file, BenchResult* result);

// The trace file of one of several recompute modes: FILE with ".<mode>" before its extension
// ("/tmp/t.json" -> "/tmp/t.full.json"), so each mode keeps its own.
std::string mode_trace_file(const std::string& file, const std::string& mode) {
  if (file.empty()) return file;
  const size_t slash = file.find_last_of('/');
  const size_t dot = file.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return file + "." + mode;
  return file.substr(0, dot) + "." + mode + file.substr(dot);
}

int bench_step(const Args& args) {
  ArgParser p("topotrain bench step", "Time training steps of the model in a config (no checkpoints, no metrics).");
  p.option("--config", "FILE", "text-format config (see examples/)", "", true)
      .repeated("--set", "KEY=VALUE", "override a config field")
      .option("--steps", "N", "measured steps", "5")
      .option("--warmup", "N", "untimed warm-up steps", "1")
      .option("--trace", "FILE",
              "record the measured steps on every rank and write them to FILE as one Chrome trace (open in "
              "Perfetto or chrome://tracing); with --recompute, one file per mode (FILE.json -> FILE.<mode>.json)")
      .option("--recompute", "MODES",
              "compare activation recompute modes, e.g. none,selective,full (each run from scratch; the table "
              "gives step time, overhead and peak memory per mode)");
  if (!p.parse(args)) return 0;
  config::Config cfg = load_config(p.get("--config"), p.get_all("--set"));
  const int steps = p.get_int("--steps"), warmup = p.get_int("--warmup");
  if (steps < 1 || warmup < 0)
    throw Error(ErrorKind::kUsage, "--steps must be >= 1 and --warmup >= 0", "topotrain bench step");
  cfg.mutable_train()->set_steps(std::max(cfg.train().steps(), steps + warmup));
  const auto comm = create_process_group(cfg);
  std::vector<std::string> modes;
  for (std::string rest = p.get("--recompute"); !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string mode = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    parse_recompute(mode);  // a clear error for an unknown one
    modes.push_back(mode);
  }
  const std::string trace_file = p.get("--trace");
  if (modes.empty()) return bench_one(p, cfg, *comm, steps, warmup, trace_file, nullptr);
  struct Row {
    std::string mode;
    BenchResult r;
  };
  std::vector<Row> rows;
  for (const std::string& mode : modes) {
    config::Config run = cfg;
    run.mutable_train()->set_recompute(mode);
    BenchResult r;
    if (int rc = bench_one(p, run, *comm, steps, warmup, mode_trace_file(trace_file, mode), &r); rc != 0) return rc;
    rows.push_back({mode, r});
  }
  if (comm->rank() != 0) return 0;
  std::printf("\nrecompute (%d of %d blocks)   ms/step   forward  backward  overhead   peak memory   predicted\n",
              cfg.train().recompute_blocks() > 0 ? cfg.train().recompute_blocks() : rows[0].r.n_layer,
              rows[0].r.n_layer);
  for (const Row& row : rows)
    std::printf("%-26s %9.1f %9.1f %9.1f %8.1f%% %13s %11s\n", row.mode.c_str(), row.r.step_s * 1e3,
                row.r.forward_s * 1e3, row.r.backward_s * 1e3, 100.0 * (row.r.step_s / rows[0].r.step_s - 1.0),
                format_bytes(row.r.peak_bytes).c_str(), format_bytes(row.r.predicted_bytes).c_str());
  return 0;
}

int bench_one(const ArgParser& p, config::Config cfg, parallel::Communicator& comm_ref, int steps, int warmup,
              const std::string& trace_file, BenchResult* result) {
  parallel::Communicator* comm = &comm_ref;
  return run_on_all_ranks(*comm, "bench step", [&] {
    resolve_auto_strategy(cfg, p.get("--config"), *comm);
    const int threads = configure_threads(cfg.train().threads());
    reset_peak_memory(Device::cpu());  // each mode's own peak (counters only: no device is touched)
    for (int d = 0; d < 16; ++d) reset_peak_memory(Device::cuda(d));
    Trainer trainer(cfg, p.get("--config"), *comm, /*random_data_fallback=*/true);
    for (int i = 0; i < warmup; ++i) trainer.step(i);
    StepTracer tracer(trace_file.empty() ? StepRange{} : StepRange{warmup + 1, warmup + steps}, trace_file, *comm);
    StepStats sum;
    for (int i = 0; i < steps; ++i) {
      tracer.before_step(warmup + i + 1);
      const StepStats s = trainer.step(warmup + i);
      tracer.after_step(warmup + i + 1);
      sum.data_s += s.data_s;
      sum.forward_s += s.forward_s;
      sum.backward_s += s.backward_s;
      sum.optimizer_s += s.optimizer_s;
      sum.exposed_comm_s += s.exposed_comm_s;
      sum.comm_s += s.comm_s;
      sum.total_s += s.total_s;
    }
    if (result) {
      *result = {sum.total_s / steps,
                 sum.forward_s / steps,
                 sum.backward_s / steps,
                 double(memory_stats(trainer.runner().device().device).peak_bytes),
                 trainer.predicted_memory().total(),
                 trainer.model_desc().n_layer};
    }
    if (comm->rank() != 0) return 0;
    const ModelDesc& desc = trainer.model_desc();
    const DeviceRunner& runner = trainer.runner();
    const bool gpu = runner.is_cuda();
    const auto& t = cfg.train();
    const double step_s = sum.total_s / steps;
    const double tps = double(trainer.tokens_per_step()) / step_s;
    const double flops = model_flops_per_token(desc, t.seq_len()) * tps;

    const std::string where = gpu ? str(comm->size(), " rank(s) on ", runner.device().str(), " (", runner.name(), ")")
                                  : str(comm->size(), " rank(s) x ", threads, " threads");
    std::printf("bench step | %s | %.1fM params | B=%d T=%d accum=%d | %s | data: %s\n", desc.str().c_str(),
                double(model_num_params(desc)) / 1e6, t.batch_size(), t.seq_len(), t.grad_accum_steps(), where.c_str(),
                trainer.uses_random_data() ? "random tokens" : cfg.data().train().c_str());
    std::printf("%-14s %12s %8s%s\n", "phase", "ms/step", "share",
                gpu ? "  (forward/backward/optimizer: CUDA events)" : "");
    const std::pair<const char*, double> rows[] = {{"data (wait)", sum.data_s},
                                                   {"forward", sum.forward_s},
                                                   {"backward", sum.backward_s},
                                                   {"exposed comm", sum.exposed_comm_s},
                                                   {"optimizer", sum.optimizer_s}};
    for (const auto& [name, secs] : rows)
      std::printf("%-14s %12.2f %7.1f%%\n", name, secs / steps * 1e3, 100.0 * secs / sum.total_s);
    std::printf("%-14s %12.2f %7.1f%%\n", "total", step_s * 1e3, 100.0);
    if (comm->size() > 1)
      std::printf("communication in flight %.2f ms/step, of which %.2f ms exposed\n", sum.comm_s / steps * 1e3,
                  sum.exposed_comm_s / steps * 1e3);
    if (!gpu) {
      std::printf("tokens/s %.1f | model FLOP/s %.1f GFLOP/s (6N+12LdT) | MFU n/a on CPU | peak memory %s (rank 0)\n",
                  tps, flops / 1e9, format_bytes(double(memory_stats(Device::cpu()).peak_bytes)).c_str());
      return 0;
    }
    const double tflops_per_gpu = flops / comm->size() / 1e12;
    const std::optional<double> peak = peak_bf16_tflops(runner.name());
    std::printf(
        "tokens/s %.1f | model FLOP/s %.1f TFLOP/s per GPU (6N+12LdT) | MFU %s (of %s dense bf16 TFLOP/s) | peak "
        "memory %s in tensors, %s in use on the device (rank 0)\n",
        tps, tflops_per_gpu, format_mfu(tflops_per_gpu, peak).c_str(), peak ? str(*peak).c_str() : "unknown",
        format_bytes(double(memory_stats(runner.device().device).peak_bytes)).c_str(),
        format_bytes(double(runner.bytes_in_use())).c_str());
    return 0;
  });
}
}  // namespace

int bench_main(const Args& args) {
  const std::string usage =
      "usage: topotrain bench <benchmark> [options]\n\nbenchmarks:\n  step    time training steps of a config\n"
      "  comm    collective bandwidth under mpirun (nccl-tests busbw) vs blocking MPI\n"
      "  tokenizer  GPT-2 BPE encode throughput on a text file\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(usage.c_str(), stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "step") return bench_step(Args(args.begin() + 1, args.end()));
  if (args[0] == "comm") return bench_comm(Args(args.begin() + 1, args.end()));
  if (args[0] == "tokenizer") return bench_tokenizer(Args(args.begin() + 1, args.end()));
  throw Error(ErrorKind::kUsage, "unknown benchmark '" + args[0] + "'", "topotrain bench",
              "available: step, tokenizer");
}

}  // namespace tt
