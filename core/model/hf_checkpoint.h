// Hugging Face model directories, read and written: config.json (GPT2LMHeadModel, LlamaForCausalLM,
// MistralForCausalLM) and the weights in model.safetensors or in shards listed by
// model.safetensors.index.json.
//
// Design: the two families map one to one onto ModelDesc presets and onto topotrain's parameter
// names (param_layout.h names tensors as the families' checkpoints do). What differs is handled
// here and nowhere else: GPT-2's Conv1D weights are stored [in, out] (transposed on the way in and
// out), its tensors may carry a "transformer." prefix or not, and its published files carry
// causal-mask buffers (".attn.bias", ".attn.masked_bias") that are skipped; vocabulary tables hold
// vocab_size rows (topotrain pads them to a multiple of 128 with zeros); RoPE settings sit in
// rope_theta / rope_scaling in older config.json files and in rope_parameters in newer ones;
// Mistral's sliding window bounds the context (full causal attention equals sliding-window
// attention up to it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/model/weights.h"

namespace tt {

// Reads a Hugging Face model directory. Throws kCheckpoint naming the file (and tensor) for a
// missing config.json, an unknown architecture, a shard named in the index but missing, a tensor
// missing or of the wrong shape, an unsupported dtype, a damaged safetensors header.
std::unique_ptr<WeightSource> open_hf_checkpoint(const std::string& dir);

// The Hugging Face architecture a description maps onto ("GPT2LMHeadModel", "LlamaForCausalLM"), or
// "" when it has none (then write_hf_checkpoint refuses it).
std::string hf_architecture(const ModelDesc& d);

// Writes config.json and the weights of a model into dir (created), dtype F32 or BF16 (F16 too):
// model.safetensors, or model-0000i-of-0000n.safetensors shards of at most max_shard_bytes each
// (a tensor never split) with model.safetensors.index.json when the weights are larger.
// params(begin, count, out) gives elements of the flat fp32 parameter buffer. Vocabulary padding is
// dropped. Throws kConfig for a description without a Hugging Face architecture.
void write_hf_checkpoint(const std::string& dir, const ModelDesc& d,
                         const std::function<void(int64_t begin, int64_t count, float* out)>& params, DType dtype,
                         uint64_t max_shard_bytes);

}  // namespace tt
