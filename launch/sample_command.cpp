// `topotrain sample`: load a model (a checkpoint file, a checkpoints/ directory or a run directory, a
// Hugging Face model directory, an llm.c model file) and continue a prompt.
#include <cstdio>
#include <limits>

#include "core/checkpoint_io.h"
#include "core/config.h"
#include "core/fs.h"
#include "core/logging.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/model_loading.h"
#include "launch/sampler.h"
#include "launch/train/trainer.h"

namespace tt {

int sample_main(const Args& args) {
  ArgParser p("topotrain sample", "Generate text from a trained checkpoint, or any model topotrain reads.");
  p.option("--checkpoint", "PATH",
           "run directory, checkpoints/ directory, .ckpt file, Hugging Face model directory or llm.c model file", "",
           true)
      .option("--prompt", "TEXT", "text to continue (token ids when the model has no tokenizer)", "")
      .option("--tokens", "N", "number of tokens to generate", "100")
      .option("--temperature", "T", "softmax temperature; 0 = greedy", "1.0")
      .option("--top-k", "K", "sample from the K most likely tokens; 0 = all", "0")
      .option("--seed", "S", "sampling seed", "1")
      .option("--threads", "N", "CPU threads; 0 = all", "0");
  if (!p.parse(args)) return 0;
  const int n_tokens = p.get_int("--tokens");
  if (n_tokens < 0) throw Error(ErrorKind::kUsage, "--tokens must be >= 0", "topotrain sample");
  SampleSettings s;  // checked before any weights are read
  s.temperature = float(p.get_double_in("--temperature", 0.0, 100.0));
  s.top_k = int(p.get_int64_in("--top-k", 0, std::numeric_limits<int>::max()));
  configure_threads(int(p.get_int64_in("--threads", 0, 1 << 16)));

  const std::unique_ptr<WeightSource> source = open_weights(p.get("--checkpoint"));
  const ModelDesc& desc = source->desc();
  const TextCodec codec = codec_of(*source);
  const std::string prompt = p.get("--prompt");
  const int window = std::min<int>(desc.max_seq_len, int(prompt.size()) + n_tokens + 1);
  const std::unique_ptr<Model> model = load_host_model(*source, 1, std::max(window, 1));  // inference, CPU
  log_info("loaded ", source->describe(), " | ", desc.str(), " | ", codec.describe());

  s.max_new_tokens = n_tokens;
  s.seed = uint64_t(p.get_int64("--seed"));
  std::printf("%s\n", generate_text(*model, codec, prompt, s).c_str());
  return 0;
}

}  // namespace tt
