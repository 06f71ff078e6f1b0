// The model's activation buffers under a recompute policy (see activation_plan.h).
#include "core/model/activation_plan.h"

#include "core/error.h"
#include "kernels/ops/ops.h"

namespace tt {

const char* recompute_name(RecomputeMode mode) {
  switch (mode) {
    case RecomputeMode::kNone:
      return "none";
    case RecomputeMode::kSelective:
      return "selective";
    case RecomputeMode::kFull:
      return "full";
  }
  return "?";
}

RecomputeMode parse_recompute(const std::string& name) {
  if (name.empty() || name == "none") return RecomputeMode::kNone;
  if (name == "selective") return RecomputeMode::kSelective;
  if (name == "full") return RecomputeMode::kFull;
  throw Error(ErrorKind::kConfig, str("train.recompute \"", name, "\" is not a recompute mode"), "train.recompute",
              "use \"none\", \"selective\" (norm outputs, MLP activation, attention probabilities) or \"full\" "
              "(each block re-runs its forward in backward)");
}

std::string describe(const Recompute& r, int n_layer) {
  if (r.mode == RecomputeMode::kNone) return "none";
  if (r.blocks <= 0 || r.blocks >= n_layer) return recompute_name(r.mode);
  return str(recompute_name(r.mode), " (", r.blocks, " of ", n_layer, " blocks)");
}

ActivationPlan::ActivationPlan(const ModelDesc& d, Device device, DType dt, int max_batch, int max_seq,
                               const Recompute& recompute)
    : desc_(d), recompute_(recompute), buffers_(size_t(Act::kCount)) {
  const int L = d.n_layer;
  recompute_blocks_ = recompute.mode == RecomputeMode::kNone ? 0
                      : recompute.blocks <= 0                ? L
                                                             : std::min(recompute.blocks, L);
  const kernels::AttentionShape shape{max_batch, max_seq, d.n_head, d.n_kv_head, d.head_dim};
  const int64_t stats = ops::attention_stats_elements(device, shape);
  quadratic_stats_ = stats > int64_t(max_batch) * d.n_head * max_seq;
  const int64_t BT = int64_t(max_batch) * max_seq, C = d.n_embd;
  auto set = [&](Act a, const char* name, Shape s, DType t) {
    buffers_[size_t(a)] = {std::string("activations.") + name, std::move(s), t};
  };
  const DType f32 = DType::kF32;
  buffers_[size_t(Act::kTokens)] = {"inputs", {BT}, DType::kI32};
  buffers_[size_t(Act::kTargets)] = {"targets", {BT}, DType::kI32};
  set(Act::kResidual, "residual", {L + 1, BT, C}, dt);
  // Per block: [rows, one block's part].
  struct PerBlock {
    Act act;
    const char* name;
    int64_t width;
    DType type;
    bool needed;
  };
  const bool ln = d.layer_norm();
  const PerBlock per_block[] = {
      {Act::kNorm1, "norm1", BT * C, dt, true},
      {Act::kNorm1Mean, "norm1_mean", BT, f32, ln},
      {Act::kNorm1Rstd, "norm1_rstd", BT, f32, true},
      {Act::kQkv, "qkv", BT * d.qkv_dim(), dt, true},
      {Act::kAttStats, "attention_stats", stats, f32, true},
      {Act::kAttOut, "attention", BT * d.q_dim(), dt, true},
      {Act::kResidualMid, "residual_mid", BT * C, dt, true},
      {Act::kNorm2, "norm2", BT * C, dt, true},
      {Act::kNorm2Mean, "norm2_mean", BT, f32, ln},
      {Act::kNorm2Rstd, "norm2_rstd", BT, f32, true},
      {Act::kMlpPre, "mlp_pre", BT * d.mlp_up_dim(), dt, true},
      {Act::kMlpAct, "mlp_act", BT * d.mlp_hidden, dt, true},
  };
  const int N = recompute_blocks_;
  for (const PerBlock& p : per_block) {
    if (!p.needed) continue;
    const int64_t rows = recomputes_kind(p.act) && N > 0 ? int64_t(L - N) + 1 : L;
    set(p.act, p.name, {rows, p.width}, p.type);
  }
  set(Act::kNormF, "normf", {BT, C}, dt);
  if (ln) set(Act::kNormFMean, "normf_mean", {BT}, f32);
  set(Act::kNormFRstd, "normf_rstd", {BT}, f32);
  set(Act::kLogits, "logits", {BT, d.padded_vocab_size}, dt);
  set(Act::kLosses, "losses", {BT}, f32);
  set(Act::kLossSum, "loss_sum", {1}, f32);
  set(Act::kProjection, "projection", {BT, C}, dt);
  set(Act::kDResidual, "backward.dresidual", {BT, C}, dt);
  set(Act::kDNorm, "backward.dnorm", {BT, C}, dt);
  set(Act::kDAttOut, "backward.dattention", {BT, d.q_dim()}, dt);
  set(Act::kDQkv, "backward.dqkv", {BT, d.qkv_dim()}, dt);
  set(Act::kDMlpPre, "backward.dmlp_pre", {BT, d.mlp_up_dim()}, dt);
  set(Act::kDMlpAct, "backward.dmlp_act", {BT, d.mlp_hidden}, dt);
  if (d.rope_positions()) {
    set(Act::kRopeCos, "rope_cos", {max_seq, d.head_dim / 2}, f32);
    set(Act::kRopeSin, "rope_sin", {max_seq, d.head_dim / 2}, f32);
  }
}

int64_t ActivationPlan::total_bytes() const {
  int64_t total = 0;
  for (const ActivationBuffer& b : buffers_) total += b.bytes();
  return total;
}

int64_t ActivationPlan::elements_per_row(Act a) const {
  const ActivationBuffer& b = buffer(a);
  return b.name.empty() ? 0 : b.shape.back();
}

bool ActivationPlan::recomputes_kind(Act a) const {
  switch (recompute_.mode) {
    case RecomputeMode::kNone:
      return false;
    case RecomputeMode::kFull:
      return per_block(a);
    case RecomputeMode::kSelective:
      return a == Act::kNorm1 || a == Act::kNorm2 || a == Act::kMlpAct || (a == Act::kAttStats && quadratic_stats_);
  }
  return false;
}

bool ActivationPlan::recomputed(int l, Act a) const { return recomputes_block(l) && recomputes_kind(a); }

int64_t ActivationPlan::row(int l, Act a) const {
  if (!recomputes_kind(a) || recompute_blocks_ == 0) return l;
  return l < recompute_blocks_ ? int64_t(desc_.n_layer - recompute_blocks_) : int64_t(l - recompute_blocks_);
}

}  // namespace tt
