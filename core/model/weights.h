// Pretrained weights in: a Hugging Face model directory (config.json + safetensors, one file or
// shards with an index), an llm.c model file (gpt2_124M.bin, fp32 or bf16) or a topotrain checkpoint
// (a .ckpt, or a run directory: its newest complete checkpoint), all read through one interface.
//
// Design: a WeightSource knows its ModelDesc (the architecture comes from the file) and hands out
// any element range of the model's flat parameter buffer (param_layout.h) as fp32, converting and
// re-laying out each tensor as it goes (GPT-2's Conv1D weights transposed, llm.c's per-kind arrays
// split per block, vocabulary padding rows zero). A caller fills exactly the part of the buffer it
// holds (a ZeRO shard) and no whole copy is ever built; a tensor whose last element has been read is
// released (its mapped pages dropped), so loading peaks at the model's fp32 size plus one tensor.
// Every value is checked: NaN or Inf is a kCheckpoint error naming the file, tensor and element.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/config.h"
#include "core/model/model_desc.h"
#include "core/model/param_layout.h"

namespace tt {

enum class WeightFormat { kHuggingFace, kLlmc, kCheckpoint };

class WeightSource {
 public:
  virtual ~WeightSource();
  virtual WeightFormat format() const = 0;

  const ModelDesc& desc() const { return desc_; }
  const ModelLayout& layout() const { return layout_; }
  // The directory (Hugging Face) or file (llm.c, the checkpoint a run directory resolved to).
  const std::string& path() const { return path_; }
  // "Hugging Face LlamaForCausalLM, 3 safetensors shards (bf16)", for logs.
  virtual std::string describe() const = 0;
  // A tokenizer file that came with the weights (Hugging Face tokenizer.json), or "".
  virtual std::string tokenizer_path() const { return ""; }

  // Elements [begin, begin + count) of the flat parameter buffer as fp32 into out.
  void read(int64_t begin, int64_t count, float* out);

 protected:
  WeightSource(const ModelDesc& desc, std::string path);
  // Elements [first, first + count) of tensor p (flat, in topotrain's layout) into out.
  virtual void read_tensor(const ParamInfo& p, int64_t first, int64_t count, float* out) = 0;
  // Tensor p has been read to its end: its memory may go.
  virtual void release_tensor(const ParamInfo& p) {}
  // Where a tensor comes from, for errors: "model-00002-of-00003.safetensors (tensor 'x')".
  virtual std::string origin_of(const ParamInfo& p) const = 0;

 private:
  ModelDesc desc_;
  ModelLayout layout_;
  std::string path_;
};

// Opens weights by what `path` is: a directory with config.json (Hugging Face), a directory with
// checkpoints/ or a .ckpt file (topotrain), or a file with the llm.c model magic. Throws kCheckpoint
// naming the path and what was expected when it is none of these or is damaged.
std::unique_ptr<WeightSource> open_weights(const std::string& path);

// The model a run trains: the config's model fields, or, with model.init_from, the description of
// those weights, with every model field the config sets checked against it (kConfig naming the
// field and both values on a disagreement).
ModelDesc run_model_desc(const config::Config& cfg);

// Writes every structural field of d into m (the inverse of model_desc_from_config), so a config
// carries the model it trained.
void fill_model_config(const ModelDesc& d, config::ModelConfig* m);

}  // namespace tt
