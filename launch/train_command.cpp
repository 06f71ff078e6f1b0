// `topotrain train`: load and validate the config, train, print the final losses (and a sample).
#include <cstdio>
#include <memory>

#include "core/config.h"
#include "core/logging.h"
#include "data/shard.h"
#include "data/synth.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/sampler.h"
#include "launch/train/auto_strategy.h"
#include "launch/train/process_group.h"
#include "launch/train/run_dir.h"
#include "launch/train/trainer.h"

namespace tt {

namespace {
// On the built-in synthetic corpus the best possible loss is known: say how close the run got.
void print_entropy_floor(const config::Config& cfg, float val_loss) {
  const auto shards = data::resolve_shards(cfg.data().train());
  const std::string manifest_path = data::find_synth_manifest(shards.front());
  if (manifest_path.empty() || val_loss < 0) return;
  const data::SynthManifest m = data::read_synth_manifest(manifest_path);
  const double floor = m.window_floor(cfg.train().seq_len());
  std::printf(
      "entropy floor of the synthetic corpus at seq_len %d: %.4f nats (rate %.4f) | val loss is %.1f%% above it\n",
      cfg.train().seq_len(), floor, m.entropy_rate_nats, 100.0 * (val_loss / floor - 1.0));
}
}  // namespace

int train_main(const Args& args) {
  ArgParser p("topotrain train", "Train a model described by a config file (.pbtxt).");
  p.option("--config", "FILE", "text-format config (see examples/)", "", true)
      .repeated("--set", "KEY=VALUE", "override a config field, e.g. --set train.steps=100")
      .flag("--resume", "continue from the newest complete checkpoint in <run_dir>/checkpoints")
      .flag("--overwrite", "start fresh where logging.run_dir holds a run: move that run into <run_dir>.previous-N");
  if (!p.parse(args)) return 0;
  const bool resume = p.get_flag("--resume");
  if (resume && p.get_flag("--overwrite"))
    throw Error(ErrorKind::kUsage, "--resume and --overwrite contradict each other", "topotrain train",
                "--resume continues the run in logging.run_dir; --overwrite moves it aside and starts fresh");
  const RunStart start = resume                      ? RunStart::kResume
                         : p.get_flag("--overwrite") ? RunStart::kOverwrite
                                                     : RunStart::kFresh;
  config::Config cfg = load_config(p.get("--config"), p.get_all("--set"));
  const auto comm = create_process_group(cfg);
  return run_on_all_ranks(*comm, "train", [&] {
    resolve_auto_strategy(cfg, p.get("--config"), *comm);
    const int threads = configure_threads(cfg.train().threads());
    if (comm->rank() == 0) log_info("config ", p.get("--config"), " | ", threads, " threads per rank");
    install_stop_signal_handlers();
    // Rank 0 writes the run directory: it holds the lock for the whole run.
    std::unique_ptr<RunDirLock> lock;
    if (comm->rank() == 0) {
      const std::string& run_dir = cfg.logging().run_dir();
      lock = std::make_unique<RunDirLock>(run_dir);
      const std::string aside = prepare_run_dir(run_dir, start);
      if (!aside.empty()) log_info("--overwrite: moved the previous run in ", run_dir, " to ", aside);
      warn_if_launcher_kills_before_checkpoint();
    }

    Trainer trainer(cfg, p.get("--config"), *comm);
    const TrainSummary s = trainer.train(resume);
    const bool sample = cfg.train().sample_at_end() && !s.interrupted;
    Model* sampler = sample ? trainer.host_model() : nullptr;  // every rank: collective with ZeRO-3
    if (comm->rank() != 0) return s.interrupted ? 130 : 0;
    std::printf("final train loss %.4f", s.final_train_loss);
    if (s.final_val_loss >= 0) std::printf(" | val loss %.4f", s.final_val_loss);
    std::printf(" | %d steps | %.0f tokens/s\n", s.steps_done, s.tokens_per_s);
    print_entropy_floor(cfg, s.final_val_loss);
    if (sampler) {
      SampleSettings ss;
      ss.max_new_tokens = 200;
      const std::string text = generate_text(*sampler, trainer.codec(), "", ss);
      std::printf("sample: %s\n", text.c_str());
    }
    std::fflush(stdout);
    return s.interrupted ? 130 : 0;
  });
}

}  // namespace tt
