// The parameter layout of a ModelDesc: every parameter tensor by name, shape and offset in ONE flat
// buffer (gradients, AdamW moments and checkpoints use the same layout), with its trainable and
// weight-decay flags and the group it belongs to. This is what the optimizer, ZeRO, gradient buckets,
// checkpoints and the planner see; none of them names an architecture.
//
// Design: buffer order is group order: group 0 the embeddings (token, then learned positions),
// group 1 + l block l, group L + 1 the final norm and, untied, the LM head. Inside a block: norm 1,
// the q/k/v projection weights back to back (so they form one [q_dim + 2·kv_dim, C] matrix: one GEMM
// whether the names are GPT-2's fused c_attn or Llama's q_proj/k_proj/v_proj), their biases likewise,
// the output projection, norm 2, the up projection (SwiGLU: gate_proj then up_proj, one [2I, C]
// GEMM), the down projection. Names follow Hugging Face's checkpoints of the family (GPT-2 without
// the "transformer." prefix, Llama with "model."), so weight import maps names one to one.
// Forward acquires groups 0, 1 … L, L + 1 and, with a tied head, 0 again; backward L + 1 (tied: 0
// first), L … 1; the embedding backward writes group 0's gradients without reading its parameters.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model_desc.h"
#include "core/tensor.h"

namespace tt {

struct ParamInfo {
  std::string name;  // e.g. "h.3.attn.c_attn.weight", "model.layers.3.self_attn.k_proj.weight"
  Shape shape;
  int64_t offset = 0;     // in elements
  bool decay = false;     // weight decay applies (matrices: 2-D tensors)
  bool trainable = true;  // receives gradients and optimizer state
  int group = 0;          // 0 embeddings, 1 + l block l, L + 1 final
};

// A contiguous range [begin, end) of the flat buffer that forward/backward use together.
struct ParamGroup {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

// Element offsets of one block's tensors in the flat buffer; -1 where the description has none.
// qkv_w / qkv_b start the fused q|k|v rows, up_w / up_b the fused gate|up rows.
struct BlockOffsets {
  int64_t norm1_w = -1, norm1_b = -1, qkv_w = -1, qkv_b = -1, out_w = -1, out_b = -1;
  int64_t norm2_w = -1, norm2_b = -1, up_w = -1, up_b = -1, down_w = -1, down_b = -1;
};

struct ModelLayout {
  std::vector<ParamInfo> tensors;  // buffer order, contiguous over [0, numel)
  std::vector<ParamGroup> groups;  // buffer order, covering [0, numel)
  std::vector<BlockOffsets> blocks;
  int64_t tok_emb = -1, pos_emb = -1, final_norm_w = -1, final_norm_b = -1;
  int64_t lm_head = -1;  // == tok_emb when tied
  int64_t numel = 0;
  // Groups used at both ends of forward and first in backward (the tied embeddings): a gathering
  // parameter source (ZeRO-3) keeps them; a gradient sink keeps their gradients for the whole pass.
  std::vector<int> reused_groups;

  const ParamInfo& find(const std::string& name) const;  // throws kInternal naming the unknown name
  int final_group() const { return int(groups.size()) - 1; }
};

ModelLayout model_layout(const ModelDesc& d);

// [begin, end) of each group (as bucket ranges and ZeRO shard units are given).
std::vector<std::pair<int64_t, int64_t>> group_ranges(const std::vector<ParamGroup>& groups);
// [begin, end) of each tensor.
std::vector<std::pair<int64_t, int64_t>> tensor_ranges(const ModelLayout& layout);

}  // namespace tt
