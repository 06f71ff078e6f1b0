// A decoder-only transformer described by data. GPT-2, Llama-2/3, Mistral-style models and their near
// relatives are all one ModelDesc: the parameter layout, the forward and backward passes, weight
// initialisation, FLOP counts and the planner's ModelSpec are computed from it, so no code path names
// an architecture.
//
// Design: `arch` is a family preset (as litgpt keeps one GPT class with a config row per model): it
// decides the defaults of the structural fields and the parameter names (Hugging Face's, so weights
// map one to one), and every field can be set on its own. A block is
//   x = x + o_proj(attention(rope?(qkv_proj(norm1(x)))));   x = x + down(act(up(norm2(x))))
// with attention over n_head query heads sharing n_kv_head key/value heads (MHA, GQA, MQA), and the
// LM head tied to the token embedding or separate. The vocabulary is padded to a multiple of 128;
// padded rows stay zero and are never a target.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "kernels/ops/ops.h"
#include "kernels/rope/rope.h"

namespace tt {

enum class PositionKind { kLearned, kRope };

struct ModelDesc {
  std::string arch = "gpt2";  // family: "gpt2" or "llama" (parameter names, defaults)
  int n_layer = 12;
  int n_head = 12;
  int n_kv_head = 12;  // divides n_head; == n_head: multi-head, 1: multi-query
  int head_dim = 64;
  int n_embd = 768;
  int vocab_size = 50257;
  int padded_vocab_size = 50304;  // vocab_size rounded up to a multiple of 128
  int max_seq_len = 1024;
  ops::NormSpec norm{ops::NormKind::kLayerNorm, 1e-5f};
  PositionKind position = PositionKind::kLearned;
  kernels::RopeSettings rope;  // with PositionKind::kRope
  ops::MlpActivation mlp = ops::MlpActivation::kGeluTanh;
  int mlp_hidden = 3072;  // width of the activation (SwiGLU: of each of gate and up)
  bool qkv_bias = true;   // biases on the q/k/v projections
  bool bias = true;       // biases on the attention output and MLP projections
  bool tied_head = true;  // LM head = token embedding
  float init_std = 0.02f;

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_kv_head * head_dim; }
  int qkv_dim() const { return q_dim() + 2 * kv_dim(); }
  // Output width of the up projection: mlp_hidden, or 2·mlp_hidden for SwiGLU (gate | up).
  int mlp_up_dim() const { return mlp == ops::MlpActivation::kSwiGLU ? 2 * mlp_hidden : mlp_hidden; }
  bool rope_positions() const { return position == PositionKind::kRope; }
  bool layer_norm() const { return norm.kind == ops::NormKind::kLayerNorm; }

  // Every structural field in one line, e.g. "llama L=2 H=4 KV=2 hd=16 C=64 V=32(128) T=64 rmsnorm(1e-05)
  // rope(10000) swiglu(176) untied"; checkpoints compare it on resume.
  std::string str() const;
  // Throws kConfig naming the model.* field of the first inconsistency (divisibility, ranges).
  void validate() const;
};

// GPT-2 (learned positions, LayerNorm with biases, GELU-tanh MLP of 4·n_embd, biases, tied head).
ModelDesc gpt2_desc(int n_layer, int n_head, int n_embd, int vocab_size, int max_seq_len);
// Llama-2/3 style (RoPE, RMSNorm 1e-5, SwiGLU, no biases, untied head). mlp_hidden 0: Llama's rule,
// 256 · ceil((8/3 · n_embd) / 256).
ModelDesc llama_desc(int n_layer, int n_head, int n_kv_head, int n_embd, int vocab_size, int max_seq_len,
                     int mlp_hidden = 0, float rope_theta = 10000.0f);

// Named published shapes: gpt2-124m, gpt2-350m, tinyllama-1.1b, llama2-7b, llama3-8b, mistral-7b. Throws kUsage
// listing the names for an unknown one.
ModelDesc model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

// The description a config asks for: the arch preset's defaults, then every field the config sets.
// Throws kConfig naming the field (model.arch, model.norm, ...) on a bad value or combination.
ModelDesc model_desc_from_config(const config::ModelConfig& m);

// Parameters of the description, in elements (vocabulary padding included).
int64_t model_num_params(const ModelDesc& d);
// Training FLOPs per token at sequence length T: 6 × (weights that do matmul work, padding and
// lookup tables excluded) + 12·L·q_dim·T (attention scores and values), the PaLM / llm.c MFU count.
double model_flops_per_token(const ModelDesc& d, int seq_len);

}  // namespace tt
