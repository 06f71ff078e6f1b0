// `topotrain export --checkpoint RUN_OR_FILE --format hf|llmc --out DIR [--dtype fp32|bf16]
// [--max-shard-size SIZE]`: a model's weights as files other tools load: a Hugging Face directory
// (`AutoModelForCausalLM.from_pretrained(DIR)`: config.json, safetensors with an index above the shard
// size, the tokenizer when the run has one) or an llm.c model file (DIR/model.bin, the file llm.c's
// trainers read as gpt2_124M.bin). Any weight source converts: a run, a checkpoint, a Hugging Face
// directory or an llm.c file. Everything is checked before anything is written.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/model/hf_checkpoint.h"
#include "core/model/llmc_model.h"
#include "data/bpe_tokenizer.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/model_loading.h"

namespace tt {

namespace {

namespace fs = std::filesystem;

// The tokenizer files transformers' GPT2Tokenizer reads, or the source's tokenizer.json.
void write_tokenizer(const WeightSource& source, const std::string& dir) {
  if (source.format() == WeightFormat::kHuggingFace && !source.tokenizer_path().empty()) {
    atomic_write_string(dir + "/tokenizer.json", read_file_to_string(source.tokenizer_path()));
    log_info("tokenizer: tokenizer.json copied from ", source.path());
    return;
  }
  const TextCodec codec = codec_of(source);
  const data::BpeTokenizer* bpe = codec.bpe_tokenizer();
  if (!bpe) {
    log_info("tokenizer: none written (", codec.describe(), ")");
    return;
  }
  atomic_write_string(dir + "/vocab.json", bpe->encoder_json());
  atomic_write_string(dir + "/merges.txt", bpe->vocab_bpe());
  nlohmann::json cfg = {{"tokenizer_class", "GPT2Tokenizer"}, {"model_max_length", source.desc().max_seq_len}};
  if (const auto eot = bpe->special_token_id("<|endoftext|>")) {
    cfg["bos_token"] = cfg["eos_token"] = cfg["unk_token"] = "<|endoftext|>";
    (void)eot;
  }
  atomic_write_string(dir + "/tokenizer_config.json", cfg.dump(2));
  log_info("tokenizer: vocab.json + merges.txt (GPT-2 byte-level BPE, ", bpe->vocab_size(), " tokens)");
}

}  // namespace

int export_main(const Args& args) {
  ArgParser p("topotrain export", "Write a model's weights for transformers (--format hf) or llm.c (--format llmc).");
  p.option("--checkpoint", "PATH", "run directory, .ckpt file, Hugging Face directory or llm.c model file", "", true)
      .option("--format", "FORMAT", "hf or llmc", "", true)
      .option("--out", "DIR", "output directory (created)", "", true)
      .option("--dtype", "DTYPE", "fp32 or bf16", "fp32")
      .option("--max-shard-size", "SIZE", "largest safetensors file (hf), e.g. 5G or 500M", "5G");
  if (!p.parse(args)) return 0;
  const std::string format = p.get("--format"), out = p.get("--out"), dtype_name = p.get("--dtype");
  if (format != "hf" && format != "llmc")
    throw Error(ErrorKind::kUsage, "unknown --format '" + format + "'", "topotrain export", "use hf or llmc");
  if (dtype_name != "fp32" && dtype_name != "bf16")
    throw Error(ErrorKind::kUsage, "unknown --dtype '" + dtype_name + "'", "topotrain export", "use fp32 or bf16");
  const DType dtype = dtype_name == "bf16" ? DType::kBF16 : DType::kF32;
  const uint64_t shard_bytes =
      uint64_t(parse_byte_size(p.get("--max-shard-size"), "--max-shard-size", "e.g. 5G, 500M or 2000000000"));

  const std::unique_ptr<WeightSource> source = open_weights(p.get("--checkpoint"));
  const ModelDesc& desc = source->desc();
  // Refuse what the format cannot hold before anything is written.
  if (format == "hf" && hf_architecture(desc).empty())
    throw Error(ErrorKind::kConfig, "this model (" + desc.str() + ") has no Hugging Face architecture to write",
                "--format hf", "GPT-2 and Llama presets export as they are; keep the topotrain checkpoint otherwise");
  if (format == "llmc" && !llmc_holds(desc))
    throw Error(ErrorKind::kConfig, "llm.c model files hold GPT-2 only, not " + desc.str(), "--format llmc",
                "export it with --format hf, or keep the topotrain checkpoint");
  if (is_directory(out) && !fs::is_empty(out))
    throw Error(ErrorKind::kUsage, "the output directory exists and is not empty", out,
                "export into a new (or empty) directory");
  // Everything goes into a sibling staging directory that becomes `out` only when complete: a bad
  // tensor found half way (NaN, a truncated shard) leaves nothing behind.
  const std::string staging = out + ".tmp." + std::to_string(::getpid());
  fs::remove_all(staging);
  const auto params = [&](int64_t begin, int64_t count, float* dst) { source->read(begin, count, dst); };
  try {
    if (format == "hf") {
      write_hf_checkpoint(staging, desc, params, dtype, shard_bytes);
      write_tokenizer(*source, staging);
    } else {
      ensure_dir(staging);
      write_llmc_model(staging + "/model.bin", desc, params, dtype);
    }
    if (is_directory(out)) fs::remove(out);  // empty: checked above
    fs::rename(staging, out);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
  std::printf("exported %s (%s) to %s as %s %s\n", source->describe().c_str(), desc.str().c_str(), out.c_str(),
              format == "hf" ? hf_architecture(desc).c_str() : "an llm.c model file", dtype_name.c_str());
  return 0;
}

}  // namespace tt
