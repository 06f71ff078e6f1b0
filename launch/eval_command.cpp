// `topotrain eval --model PATH --data SHARDS [--batch-size B --seq-len T --batches N] [--json]`: the
// mean next-token loss and perplexity of any model source (Hugging Face directory, llm.c model
// file, run directory or checkpoint) on token shards, in llm.c's loader order: consecutive windows,
// no shuffling, batch b row i starts at token (b·B + i)·T of a shard, targets shifted by one.
// CPU, fp32. --json also reports the process's peak resident memory (loading is tensor by tensor).
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/logging.h"
#include "data/loader.h"
#include "data/shard.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/model_loading.h"
#include "launch/train/trainer.h"

namespace tt {

int eval_main(const Args& args) {
  ArgParser p("topotrain eval",
              "Mean next-token loss and perplexity of a model on token shards (llm.c's order: consecutive windows).");
  p.option("--model", "PATH", "Hugging Face model directory, llm.c model file, run directory or .ckpt", "", true)
      .option("--data", "SHARDS", "llm.c token shards: a file, a directory or a glob", "", true)
      .option("--batch-size", "B", "sequences per batch", "4")
      .option("--seq-len", "T", "tokens per sequence (default: the model's context, at most 1024)", "0")
      .option("--batches", "N", "batches to evaluate; 0 = every batch of the shards", "0")
      .option("--threads", "N", "CPU threads; 0 = all", "0")
      .flag("--json", "print one JSON object (loss, perplexity, tokens, ...) instead of text");
  if (!p.parse(args)) return 0;
  const int B = int(p.get_int64_in("--batch-size", 1, 1 << 20));
  const bool json_out = p.get_flag("--json");
  configure_threads(p.get_int("--threads"));

  const std::unique_ptr<WeightSource> source = open_weights(p.get("--model"));
  const ModelDesc& desc = source->desc();
  int T = int(p.get_int64_in("--seq-len", 0, desc.max_seq_len));
  if (T == 0) T = std::min(desc.max_seq_len, 1024);
  data::DataLoader loader(data::resolve_shards(p.get("--data")), B, T, /*rank=*/0, /*world_size=*/1, /*seed=*/0,
                          /*shuffle=*/false);
  int64_t batches = p.get_int64_in("--batches", 0, int64_t(1) << 40);
  if (batches == 0 || batches > loader.batches_per_epoch()) {
    if (batches > loader.batches_per_epoch() && !json_out)
      log_warn("--batches ", batches, " exceeds the ", loader.batches_per_epoch(), " the data holds; evaluating those");
    batches = loader.batches_per_epoch();
  }
  if (!json_out) std::printf("eval | %s | %s\n", source->describe().c_str(), desc.str().c_str());
  const auto model = load_host_model(*source, B, T);

  std::vector<int32_t> inputs(size_t(B) * T), targets(inputs.size());
  const auto t0 = std::chrono::steady_clock::now();
  double sum = 0.0;
  for (int64_t b = 0; b < batches; ++b) {
    loader.next(inputs.data(), targets.data());
    model->forward(inputs.data(), targets.data(), B, T);
    sum += model->take_loss_sum();
    if (!json_out && batches >= 20 && (b + 1) % (batches / 10) == 0)
      log_info("eval ", b + 1, "/", batches, " batches | loss so far ", sum / double(b + 1));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double loss = sum / double(batches);
  const int64_t tokens = batches * B * T;
  if (json_out) {
    nlohmann::json j;
    j["loss"] = loss;
    j["perplexity"] = std::exp(loss);
    j["tokens"] = tokens;
    j["batches"] = batches;
    j["batch_size"] = B;
    j["seq_len"] = T;
    j["model"] = desc.str();
    j["source"] = source->describe();
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    j["peak_rss_bytes"] = int64_t(usage.ru_maxrss) * 1024;  // the process's high-water mark (Linux: KiB)
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("loss %.6f | perplexity %.4f | %lld tokens (%lld batches of %d x %d) | %.0f tokens/s\n", loss,
                std::exp(loss), (long long)tokens, (long long)batches, B, T, double(tokens) / seconds);
  }
  return 0;
}

}  // namespace tt
