// Model descriptions: presets, the config's reading of them, validation, parameter and FLOP counts.
#include "core/model/model_desc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "core/did_you_mean.h"
#include "core/error.h"
#include "core/model/param_layout.h"

namespace tt {

namespace {
// Sizes derived from a field saturate at INT_MAX (in 64-bit arithmetic), so a field past its bound
// reaches validate(), which names it, without an int overflow on the way.
int saturate(int64_t v) { return int(std::min<int64_t>(v, std::numeric_limits<int>::max())); }

int pad_vocab(int v) { return saturate((int64_t(v) + 127) / 128 * 128); }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int llama_mlp_hidden(int n_embd) {
  const int64_t hidden = 2 * (4 * int64_t(n_embd)) / 3;
  return saturate((hidden + 255) / 256 * 256);
}

[[noreturn]] void bad(const std::string& field, const std::string& what, const std::string& hint) {
  throw Error(ErrorKind::kConfig, what, field, hint);
}
}  // namespace

std::string ModelDesc::str() const {
  std::string s = tt::str(arch, " L=", n_layer, " H=", n_head, " KV=", n_kv_head, " hd=", head_dim, " C=", n_embd,
                          " V=", vocab_size, "(", padded_vocab_size, ") T=", max_seq_len, " ",
                          layer_norm() ? "layernorm" : "rmsnorm", "(", number(norm.eps), ") ");
  if (rope_positions()) {
    s += "rope(" + number(rope.theta);
    if (rope.scaling_factor > 1.0f)
      s += tt::str(" x", number(rope.scaling_factor), " ", number(rope.low_freq_factor), "/",
                   number(rope.high_freq_factor), "@", rope.original_max_seq_len);
    s += ")";
  } else {
    s += "learned";
  }
  s += tt::str(" ", mlp == ops::MlpActivation::kSwiGLU ? "swiglu" : "gelu", "(", mlp_hidden, ")");
  if (qkv_bias) s += " qkv_bias";
  if (bias) s += " bias";
  s += tied_head ? " tied" : " untied";
  return s;
}

void ModelDesc::validate() const {
  if (arch != "gpt2" && arch != "llama")
    bad("model.arch", "model.arch \"" + arch + "\" is not supported", "use \"gpt2\" or \"llama\"");
  auto positive = [](const char* field, int v) {
    if (v <= 0) bad(field, tt::str(field, " must be > 0 (got ", v, ")"), "set it in model { }");
  };
  positive("model.n_layer", n_layer);
  positive("model.n_head", n_head);
  positive("model.n_kv_head", n_kv_head);
  positive("model.head_dim", head_dim);
  positive("model.n_embd", n_embd);
  positive("model.vocab_size", vocab_size);
  positive("model.max_seq_len", max_seq_len);
  positive("model.mlp_hidden", mlp_hidden);
  // The same bounds as a config's (model_limits): weights imported from a file must not size the
  // model past them either.
  auto at_most = [](const char* field, long long v, long long limit) {
    if (v > limit)
      bad(field, tt::str(field, " is ", v, ", over the largest supported value, ", limit),
          "check the value; no published model comes near it");
  };
  at_most("model.n_layer", n_layer, model_limits::kLayers);
  at_most("model.n_head", n_head, model_limits::kWidth);
  at_most("model.n_kv_head", n_kv_head, model_limits::kWidth);
  at_most("model.head_dim", head_dim, model_limits::kWidth);
  at_most("model.n_embd", n_embd, model_limits::kWidth);
  at_most("model.n_head × model.head_dim", (long long)n_head * head_dim, model_limits::kWidth);
  at_most("model.vocab_size", vocab_size, model_limits::kVocab);
  at_most("model.max_seq_len", max_seq_len, model_limits::kSeqLen);
  at_most("model.mlp_hidden", mlp_hidden, model_limits::kMlpHidden);
  if (n_head % n_kv_head != 0)
    bad("model.n_kv_head",
        tt::str("model.n_head (", n_head, ") must be a multiple of model.n_kv_head (", n_kv_head, ")"),
        "each key/value head serves n_head / n_kv_head query heads, e.g. n_head 32 with n_kv_head 8");
  if (rope_positions() && head_dim % 2 != 0)
    bad("model.head_dim", tt::str("RoPE needs an even head_dim (got ", head_dim, ")"), "use an even head size");
  if (!(norm.eps > 0) || !std::isfinite(norm.eps))
    bad("model.norm_eps", tt::str("model.norm_eps must be a finite number > 0 (got ", norm.eps, ")"), "e.g. 1e-5");
  if (rope_positions() && (!(rope.theta > 0) || !std::isfinite(rope.theta)))
    bad("model.rope_theta", tt::str("model.rope_theta must be > 0 (got ", rope.theta, ")"), "Llama 2 uses 10000");
  if (rope.scaling_factor > 1.0f) {
    if (!(rope.high_freq_factor > rope.low_freq_factor))
      bad("model.rope_scaling.high_freq_factor",
          tt::str("rope_scaling.high_freq_factor (", rope.high_freq_factor, ") must exceed low_freq_factor (",
                  rope.low_freq_factor, ")"),
          "Llama 3.1 uses low_freq_factor 1, high_freq_factor 4");
    if (rope.original_max_seq_len <= 0)
      bad("model.rope_scaling.original_max_seq_len", "rope_scaling.original_max_seq_len must be > 0",
          "Llama 3.1 uses 8192");
  }
  if (!(init_std > 0) || !std::isfinite(init_std))
    bad("model.init_std", tt::str("model.init_std must be a finite number > 0 (got ", init_std, ")"),
        "GPT-2 uses 0.02");
}

ModelDesc gpt2_desc(int n_layer, int n_head, int n_embd, int vocab_size, int max_seq_len) {
  ModelDesc d;
  d.arch = "gpt2";
  d.n_layer = n_layer;
  d.n_head = d.n_kv_head = n_head;
  d.head_dim = n_head > 0 ? n_embd / n_head : 0;
  d.n_embd = n_embd;
  d.vocab_size = vocab_size;
  d.padded_vocab_size = pad_vocab(vocab_size);
  d.max_seq_len = max_seq_len;
  d.norm = {ops::NormKind::kLayerNorm, 1e-5f};
  d.position = PositionKind::kLearned;
  d.mlp = ops::MlpActivation::kGeluTanh;
  d.mlp_hidden = saturate(4 * int64_t(n_embd));
  d.qkv_bias = d.bias = d.tied_head = true;
  return d;
}

ModelDesc llama_desc(int n_layer, int n_head, int n_kv_head, int n_embd, int vocab_size, int max_seq_len,
                     int mlp_hidden, float rope_theta) {
  ModelDesc d;
  d.arch = "llama";
  d.n_layer = n_layer;
  d.n_head = n_head;
  d.n_kv_head = n_kv_head;
  d.head_dim = n_head > 0 ? n_embd / n_head : 0;
  d.n_embd = n_embd;
  d.vocab_size = vocab_size;
  d.padded_vocab_size = pad_vocab(vocab_size);
  d.max_seq_len = max_seq_len;
  d.norm = {ops::NormKind::kRMSNorm, 1e-5f};
  d.position = PositionKind::kRope;
  d.rope.theta = rope_theta;
  d.mlp = ops::MlpActivation::kSwiGLU;
  d.mlp_hidden = mlp_hidden > 0 ? mlp_hidden : llama_mlp_hidden(n_embd);
  d.qkv_bias = d.bias = d.tied_head = false;
  return d;
}

std::vector<std::string> model_preset_names() {
  return {"gpt2-124m", "gpt2-350m", "tinyllama-1.1b", "llama2-7b", "llama3-8b", "mistral-7b"};
}

ModelDesc model_preset(const std::string& name) {
  if (name == "gpt2-124m") return gpt2_desc(12, 12, 768, 50257, 1024);
  if (name == "gpt2-350m") return gpt2_desc(24, 16, 1024, 50257, 1024);
  if (name == "tinyllama-1.1b") return llama_desc(22, 32, 4, 2048, 32000, 2048, 5632);
  if (name == "llama2-7b" || name == "llama-7b") return llama_desc(32, 32, 32, 4096, 32000, 4096, 11008);
  if (name == "llama3-8b") {
    ModelDesc d = llama_desc(32, 32, 8, 4096, 128256, 8192, 14336, 500000.0f);
    return d;
  }
  if (name == "mistral-7b") return llama_desc(32, 32, 8, 4096, 32000, 32768, 14336, 1000000.0f);
  std::string names;
  for (const auto& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
  const std::string near = closest_name(name, model_preset_names());
  throw Error(ErrorKind::kUsage, "unknown model '" + name + "'", "--model",
              (near.empty() ? "" : "did you mean '" + near + "'? ") + "one of: " + names);
}

ModelDesc model_desc_from_config(const config::ModelConfig& m) {
  const std::string arch = m.arch().empty() ? "gpt2" : m.arch();
  ModelDesc d;
  if (arch == "gpt2")
    d = gpt2_desc(m.n_layer(), m.n_head(), m.n_embd(), m.vocab_size(), m.max_seq_len());
  else if (arch == "llama")
    d = llama_desc(m.n_layer(), m.n_head(), m.n_kv_head() > 0 ? m.n_kv_head() : m.n_head(), m.n_embd(), m.vocab_size(),
                   m.max_seq_len(), m.mlp_hidden());
  else
    bad("model.arch", "model.arch \"" + arch + "\" is not supported",
        "use \"gpt2\" or \"llama\" and describe the rest with the model.* fields");
  if (m.n_kv_head() > 0) d.n_kv_head = m.n_kv_head();
  if (m.head_dim() > 0) d.head_dim = m.head_dim();
  if (!m.norm().empty()) {
    if (m.norm() == "layernorm")
      d.norm.kind = ops::NormKind::kLayerNorm;
    else if (m.norm() == "rmsnorm")
      d.norm.kind = ops::NormKind::kRMSNorm;
    else
      bad("model.norm", "model.norm \"" + m.norm() + "\" is not supported", "use \"layernorm\" or \"rmsnorm\"");
  }
  if (m.has_norm_eps()) d.norm.eps = m.norm_eps();
  if (!m.position().empty()) {
    if (m.position() == "learned")
      d.position = PositionKind::kLearned;
    else if (m.position() == "rope")
      d.position = PositionKind::kRope;
    else
      bad("model.position", "model.position \"" + m.position() + "\" is not supported", "use \"learned\" or \"rope\"");
  }
  if (m.has_rope_theta()) d.rope.theta = m.rope_theta();
  if (m.has_rope_scaling()) {
    const auto& s = m.rope_scaling();
    d.rope.scaling_factor = s.factor();
    if (s.has_low_freq_factor()) d.rope.low_freq_factor = s.low_freq_factor();
    if (s.has_high_freq_factor()) d.rope.high_freq_factor = s.high_freq_factor();
    if (s.original_max_seq_len() > 0) d.rope.original_max_seq_len = s.original_max_seq_len();
  }
  if (!m.mlp().empty()) {
    const ops::MlpActivation before = d.mlp;
    if (m.mlp() == "gelu")
      d.mlp = ops::MlpActivation::kGeluTanh;
    else if (m.mlp() == "swiglu")
      d.mlp = ops::MlpActivation::kSwiGLU;
    else
      bad("model.mlp", "model.mlp \"" + m.mlp() + "\" is not supported", "use \"gelu\" or \"swiglu\"");
    if (d.mlp != before && m.mlp_hidden() <= 0)  // the other family's width rule
      d.mlp_hidden = d.mlp == ops::MlpActivation::kSwiGLU ? llama_mlp_hidden(m.n_embd()) : 4 * m.n_embd();
  }
  if (m.mlp_hidden() > 0) d.mlp_hidden = m.mlp_hidden();
  if (m.has_qkv_bias()) d.qkv_bias = m.qkv_bias();
  if (m.has_bias()) d.bias = m.bias();
  if (m.has_tied_head()) d.tied_head = m.tied_head();
  if (m.has_init_std()) d.init_std = m.init_std();
  d.validate();
  return d;
}

int64_t model_num_params(const ModelDesc& d) { return model_layout(d).numel; }

double model_flops_per_token(const ModelDesc& d, int seq_len) {
  const ModelLayout layout = model_layout(d);
  // Weights that do matmul work: not the position table and the padded vocabulary rows, and with an
  // untied head not the token embedding either (a lookup; the head is the vocabulary's matmul).
  double n = double(layout.numel) - double(d.padded_vocab_size - d.vocab_size) * d.n_embd;
  if (layout.pos_emb >= 0) n -= double(d.max_seq_len) * d.n_embd;
  if (!d.tied_head) n -= double(d.padded_vocab_size) * d.n_embd;
  return 6.0 * n + 12.0 * d.n_layer * double(d.q_dim()) * seq_len;
}

}  // namespace tt
