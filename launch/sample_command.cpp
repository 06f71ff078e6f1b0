// `topotrain sample`: load a checkpoint (a file, a checkpoints/ directory, or a run directory) and
// continue a prompt.
#include <cstdio>

#include "core/checkpoint_io.h"
#include "core/config.h"
#include "core/fs.h"
#include "core/logging.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/sampler.h"
#include "launch/train/trainer.h"

namespace tt {

namespace {
std::string resolve_checkpoint(const std::string& path) {
  if (!is_directory(path)) return path;
  for (const std::string& dir : {path + "/checkpoints", path}) {
    if (!is_directory(dir)) continue;
    const std::string newest = newest_complete_checkpoint(dir);
    if (!newest.empty()) return newest;
  }
  throw Error(ErrorKind::kCheckpoint, "no complete checkpoint found", path,
              "pass a run directory, its checkpoints/ directory, or a step_*.ckpt file");
}
}  // namespace

int sample_main(const Args& args) {
  ArgParser p("topotrain sample", "Generate text from a trained checkpoint.");
  p.option("--checkpoint", "PATH", "run directory, checkpoints/ directory or .ckpt file", "", true)
      .option("--prompt", "TEXT", "text to continue (token ids when the model has no tokenizer)", "")
      .option("--tokens", "N", "number of tokens to generate", "100")
      .option("--temperature", "T", "softmax temperature; 0 = greedy", "1.0")
      .option("--top-k", "K", "sample from the K most likely tokens; 0 = all", "0")
      .option("--seed", "S", "sampling seed", "1")
      .option("--threads", "N", "CPU threads; 0 = all", "0");
  if (!p.parse(args)) return 0;
  const int n_tokens = p.get_int("--tokens");
  if (n_tokens < 0) throw Error(ErrorKind::kUsage, "--tokens must be >= 0", "topotrain sample");
  configure_threads(p.get_int("--threads"));

  const std::string path = resolve_checkpoint(p.get("--checkpoint"));
  CheckpointReader r(path);
  const config::Config cfg = parse_config_text(r.string("config"), path + " (section 'config')");
  const ModelDesc desc = model_desc_from_config(cfg.model());
  const TextCodec codec = TextCodec::parse(r.string("tokenizer"));
  const std::string prompt = p.get("--prompt");
  const int window = std::min<int>(desc.max_seq_len, int(prompt.size()) + n_tokens + 1);
  ModelOptions mo;  // inference only, on the CPU
  mo.max_seq = std::max(window, 1);
  mo.hold_grads = false;
  Model model(desc, mo);
  r.copy_to("params", model.params().raw(), model.params().nbytes());
  log_info("loaded ", path, " | ", desc.str(), " | ", codec.describe());

  SampleSettings s;
  s.max_new_tokens = n_tokens;
  s.temperature = float(p.get_double("--temperature"));
  s.top_k = p.get_int("--top-k");
  s.seed = uint64_t(p.get_int64("--seed"));
  std::printf("%s\n", generate_text(model, codec, prompt, s).c_str());
  return 0;
}

}  // namespace tt
