// Parameter layout of a ModelDesc (see param_layout.h): one walk over the groups, naming each tensor
// after the family's Hugging Face checkpoints.
#include "core/model/param_layout.h"

#include "core/error.h"

namespace tt {

namespace {

// Hugging Face names of one family. Fused tensors (GPT-2's c_attn and c_fc) have one name; split ones
// (Llama's q/k/v and gate/up) one per part.
struct Names {
  std::string tok_emb, pos_emb, final_norm, lm_head;
  std::string block_prefix;  // followed by the block index and '.'
  std::string norm1, norm2, out, down;
  std::vector<std::string> qkv;  // 1 (fused) or 3 names: q, k, v
  std::vector<std::string> up;   // 1 (fused, or a plain GELU up) or gate, up
};

Names names_of(const ModelDesc& d) {
  Names n;
  const bool swiglu = d.mlp == ops::MlpActivation::kSwiGLU;
  if (d.arch == "llama") {
    n.tok_emb = "model.embed_tokens";
    n.pos_emb = "model.embed_positions";
    n.final_norm = "model.norm";
    n.lm_head = "lm_head";
    n.block_prefix = "model.layers.";
    n.norm1 = "input_layernorm";
    n.norm2 = "post_attention_layernorm";
    n.qkv = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
    n.out = "self_attn.o_proj";
    n.up = swiglu ? std::vector<std::string>{"mlp.gate_proj", "mlp.up_proj"} : std::vector<std::string>{"mlp.up_proj"};
    n.down = "mlp.down_proj";
  } else {
    n.tok_emb = "wte";
    n.pos_emb = "wpe";
    n.final_norm = "ln_f";
    n.lm_head = "lm_head";
    n.block_prefix = "h.";
    n.norm1 = "ln_1";
    n.norm2 = "ln_2";
    n.qkv = {"attn.c_attn"};
    n.out = "attn.c_proj";
    n.up = {"mlp.c_fc"};
    n.down = "mlp.c_proj";
  }
  return n;
}

}  // namespace

const ParamInfo& ModelLayout::find(const std::string& name) const {
  for (const auto& p : tensors)
    if (p.name == name) return p;
  throw Error(ErrorKind::kInternal, "no parameter named '" + name + "'", "model layout",
              "names follow Hugging Face's checkpoints, e.g. h.0.attn.c_attn.weight (GPT-2) or "
              "model.layers.0.self_attn.q_proj.weight (Llama)");
}

ModelLayout model_layout(const ModelDesc& d) {
  ModelLayout out;
  const Names names = names_of(d);
  const int64_t C = d.n_embd;
  int group = 0;
  // Adds a tensor (split into `parts` row blocks named after `part_names` when there are several);
  // returns the offset of its first element.
  auto add = [&](const std::string& name, Shape shape, bool decay) {
    ParamInfo p;
    p.name = name;
    p.shape = std::move(shape);
    p.offset = out.numel;
    p.decay = decay;
    p.group = group;
    out.numel += shape_numel(p.shape);
    out.tensors.push_back(std::move(p));
    return out.tensors.back().offset;
  };
  // Consecutive row blocks of one fused matrix (or bias), one tensor per name when split.
  auto add_rows = [&](const std::string& prefix, const std::vector<std::string>& parts,
                      const std::vector<int64_t>& rows, int64_t cols, const char* suffix) {
    const bool matrix = cols > 0;
    if (parts.size() == 1) {
      int64_t total = 0;
      for (int64_t r : rows) total += r;
      return add(prefix + parts[0] + suffix, matrix ? Shape{total, cols} : Shape{total}, matrix);
    }
    int64_t first = -1;
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t at = add(prefix + parts[i] + suffix, matrix ? Shape{rows[i], cols} : Shape{rows[i]}, matrix);
      if (i == 0) first = at;
    }
    return first;
  };
  auto group_begin = [&]() { out.groups.push_back({out.numel, out.numel}); };
  auto group_end = [&]() { out.groups.back().end = out.numel; };

  group_begin();
  out.tok_emb = add(names.tok_emb + ".weight", {d.padded_vocab_size, C}, true);
  if (!d.rope_positions()) out.pos_emb = add(names.pos_emb + ".weight", {d.max_seq_len, C}, true);
  group_end();

  const std::vector<int64_t> qkv_rows = names.qkv.size() == 1 ? std::vector<int64_t>{d.qkv_dim()}
                                                              : std::vector<int64_t>{d.q_dim(), d.kv_dim(), d.kv_dim()};
  const std::vector<int64_t> up_rows =
      names.up.size() == 1 ? std::vector<int64_t>{d.mlp_up_dim()} : std::vector<int64_t>{d.mlp_hidden, d.mlp_hidden};
  for (int l = 0; l < d.n_layer; ++l) {
    ++group;
    group_begin();
    const std::string b = names.block_prefix + std::to_string(l) + ".";
    BlockOffsets o;
    o.norm1_w = add(b + names.norm1 + ".weight", {C}, false);
    if (d.layer_norm()) o.norm1_b = add(b + names.norm1 + ".bias", {C}, false);
    o.qkv_w = add_rows(b, names.qkv, qkv_rows, C, ".weight");
    if (d.qkv_bias) o.qkv_b = add_rows(b, names.qkv, qkv_rows, 0, ".bias");
    o.out_w = add(b + names.out + ".weight", {C, d.q_dim()}, true);
    if (d.bias) o.out_b = add(b + names.out + ".bias", {C}, false);
    o.norm2_w = add(b + names.norm2 + ".weight", {C}, false);
    if (d.layer_norm()) o.norm2_b = add(b + names.norm2 + ".bias", {C}, false);
    o.up_w = add_rows(b, names.up, up_rows, C, ".weight");
    if (d.bias) o.up_b = add_rows(b, names.up, up_rows, 0, ".bias");
    o.down_w = add(b + names.down + ".weight", {C, d.mlp_hidden}, true);
    if (d.bias) o.down_b = add(b + names.down + ".bias", {C}, false);
    out.blocks.push_back(o);
    group_end();
  }

  ++group;
  group_begin();
  out.final_norm_w = add(names.final_norm + ".weight", {C}, false);
  if (d.layer_norm()) out.final_norm_b = add(names.final_norm + ".bias", {C}, false);
  out.lm_head = d.tied_head ? out.tok_emb : add(names.lm_head + ".weight", {d.padded_vocab_size, C}, true);
  group_end();
  if (d.tied_head) out.reused_groups = {0};
  return out;
}

std::vector<std::pair<int64_t, int64_t>> group_ranges(const std::vector<ParamGroup>& groups) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const ParamGroup& g : groups) ranges.push_back({g.begin, g.end});
  return ranges;
}

std::vector<std::pair<int64_t, int64_t>> tensor_ranges(const ModelLayout& layout) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const ParamInfo& p : layout.tensors) ranges.push_back({p.offset, p.offset + shape_numel(p.shape)});
  return ranges;
}

}  // namespace tt
