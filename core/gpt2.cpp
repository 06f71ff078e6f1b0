// GPT-2 forward/backward over the CPU kernels. Layer l's forward:
//   ln1 = LN(res_in); qkv = ln1·Wqkvᵀ; atty = attn(qkv); res2 = res_in + atty·Wprojᵀ
//   ln2 = LN(res2);   fch = ln2·Wfcᵀ;  res3 = res2 + gelu(fch)·Wfcprojᵀ
// Backward carries one residual-gradient buffer through the layers: every op's backward accumulates,
// so the LayerNorm backward adds its input gradient straight into it.
#include "core/gpt2.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/rng.h"
#include "kernels/attention/attention.h"
#include "kernels/embedding/embedding.h"
#include "kernels/gelu/gelu.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/residual/residual.h"
#include "kernels/softmax_cross_entropy/softmax_cross_entropy.h"

namespace tt {

using namespace kernels;

namespace {
// Per-layer parameter order inside the flat buffer; shapes as functions of C.
struct LayerParamSpec {
  const char* name;
  int rows_mult;
  int cols_mult;
  bool is_matrix;
};
constexpr LayerParamSpec kLayerSpecs[] = {
    {"ln_1.weight", 1, 0, false},      {"ln_1.bias", 1, 0, false},         {"attn.c_attn.weight", 3, 1, true},
    {"attn.c_attn.bias", 3, 0, false}, {"attn.c_proj.weight", 1, 1, true}, {"attn.c_proj.bias", 1, 0, false},
    {"ln_2.weight", 1, 0, false},      {"ln_2.bias", 1, 0, false},         {"mlp.c_fc.weight", 4, 1, true},
    {"mlp.c_fc.bias", 4, 0, false},    {"mlp.c_proj.weight", 1, 4, true},  {"mlp.c_proj.bias", 1, 0, false},
};
constexpr int kParamsPerLayer = 12;

void zero(const Tensor& t, int64_t n) { std::memset(t.raw(), 0, size_t(n) * sizeof(float)); }
}  // namespace

GPT2Config GPT2Config::make(int n_layer, int n_head, int n_embd, int vocab_size, int max_seq_len) {
  GPT2Config c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.vocab_size = vocab_size;
  c.padded_vocab_size = (vocab_size + 127) / 128 * 128;
  c.max_seq_len = max_seq_len;
  return c;
}

std::string GPT2Config::str() const {
  return tt::str("L=", n_layer, " H=", n_head, " C=", n_embd, " V=", vocab_size, "(", padded_vocab_size,
                 ") T=", max_seq_len);
}

std::vector<ParamInfo> gpt2_param_layout(const GPT2Config& cfg) {
  std::vector<ParamInfo> out;
  int64_t offset = 0;
  auto add = [&](std::string name, Shape shape, bool decay, int layer) {
    ParamInfo p{std::move(name), shape, offset, decay, layer};
    offset += shape_numel(shape);
    out.push_back(std::move(p));
  };
  const int64_t C = cfg.n_embd;
  add("wte.weight", {cfg.padded_vocab_size, C}, true, -1);
  add("wpe.weight", {cfg.max_seq_len, C}, true, -1);
  for (int l = 0; l < cfg.n_layer; ++l) {
    for (const auto& s : kLayerSpecs) {
      Shape shape = s.is_matrix ? Shape{s.rows_mult * C, s.cols_mult * C} : Shape{s.rows_mult * C};
      add("h." + std::to_string(l) + "." + s.name, shape, s.is_matrix, l);
    }
  }
  add("ln_f.weight", {C}, false, cfg.n_layer);
  add("ln_f.bias", {C}, false, cfg.n_layer);
  return out;
}

std::vector<ParamGroup> gpt2_param_groups(const GPT2Config& cfg) { return gpt2_param_groups(gpt2_param_layout(cfg)); }

std::vector<ParamGroup> gpt2_param_groups(const std::vector<ParamInfo>& layout) {
  std::vector<ParamGroup> groups;
  for (const auto& p : layout) {
    if (size_t(p.layer + 1) >= groups.size()) groups.resize(size_t(p.layer) + 2);
    ParamGroup& g = groups[size_t(p.layer + 1)];
    if (g.end == 0) g.begin = p.offset;
    g.end = p.offset + shape_numel(p.shape);
  }
  return groups;
}

std::vector<std::pair<int64_t, int64_t>> group_ranges(const std::vector<ParamGroup>& groups) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const ParamGroup& g : groups) ranges.push_back({g.begin, g.end});
  return ranges;
}

int64_t gpt2_num_params(const GPT2Config& cfg) {
  const auto layout = gpt2_param_layout(cfg);
  return layout.back().offset + shape_numel(layout.back().shape);
}

double gpt2_flops_per_token(const GPT2Config& cfg, int seq_len) {
  double n = double(gpt2_num_params(cfg)) -
             double(cfg.padded_vocab_size - cfg.vocab_size) * cfg.n_embd;  // padding does no work
  n -= double(cfg.max_seq_len) * cfg.n_embd;  // position embedding is a lookup, not a matmul
  return 6.0 * n + 12.0 * cfg.n_layer * cfg.n_embd * seq_len;
}

GPT2::GPT2(const GPT2Config& cfg, int max_batch, int max_seq, bool hold_params, bool hold_grads)
    : cfg_(cfg),
      max_batch_(max_batch),
      max_seq_(max_seq),
      layout_(gpt2_param_layout(cfg)),
      groups_(gpt2_param_groups(cfg)) {
  if (max_seq > cfg.max_seq_len)
    throw Error(ErrorKind::kConfig,
                str("sequence length ", max_seq, " exceeds the model's max_seq_len ", cfg.max_seq_len), "train.seq_len",
                "lower train.seq_len or raise model.max_seq_len");
  const int64_t n = gpt2_num_params(cfg);
  if (hold_params) params_ = Tensor::zeros("parameters", {n});
  if (hold_grads) grads_ = Tensor::zeros("gradients", {n});

  const int64_t BT = int64_t(max_batch) * max_seq, C = cfg.n_embd, L = cfg.n_layer, NH = cfg.n_head;
  auto act = [&](const char* name, Shape s) { return Tensor::zeros(std::string("activations.") + name, s); };
  acts_.encoded = act("encoded", {BT, C});
  acts_.ln1 = act("ln1", {L, BT, C});
  acts_.ln1_mean = act("ln1_mean", {L, BT});
  acts_.ln1_rstd = act("ln1_rstd", {L, BT});
  acts_.qkv = act("qkv", {L, BT, 3 * C});
  acts_.atty = act("atty", {L, BT, C});
  acts_.att = act("att", {L, max_batch, NH, max_seq, max_seq});
  acts_.attproj = act("attproj", {L, BT, C});
  acts_.residual2 = act("residual2", {L, BT, C});
  acts_.ln2 = act("ln2", {L, BT, C});
  acts_.ln2_mean = act("ln2_mean", {L, BT});
  acts_.ln2_rstd = act("ln2_rstd", {L, BT});
  acts_.fch = act("fch", {L, BT, 4 * C});
  acts_.fch_gelu = act("fch_gelu", {L, BT, 4 * C});
  acts_.fcproj = act("fcproj", {L, BT, C});
  acts_.residual3 = act("residual3", {L, BT, C});
  acts_.lnf = act("lnf", {BT, C});
  acts_.lnf_mean = act("lnf_mean", {BT});
  acts_.lnf_rstd = act("lnf_rstd", {BT});
  acts_.logits = act("logits", {BT, cfg.padded_vocab_size});
  acts_.losses = act("losses", {BT});

  auto scratch = [&](const char* name, Shape s) { return Tensor::zeros(std::string("backward.") + name, s); };
  scratch_.dresidual = scratch("dresidual", {BT, C});
  scratch_.dbtc = scratch("dbtc", {BT, C});
  scratch_.dbtc2 = scratch("dbtc2", {BT, C});
  scratch_.dqkv = scratch("dqkv", {BT, 3 * C});
  scratch_.dfch = scratch("dfch", {BT, 4 * C});
  scratch_.dfch_gelu = scratch("dfch_gelu", {BT, 4 * C});
}

const ParamInfo& GPT2::param(const std::string& name) const {
  for (const auto& p : layout_)
    if (p.name == name) return p;
  throw Error(ErrorKind::kInternal, "no parameter named '" + name + "'", "GPT-2",
              "parameter names follow Hugging Face GPT-2, e.g. h.0.attn.c_attn.weight");
}

GPT2::LayerParams GPT2::layer_params(float* base, int64_t base_offset, int l) const {
  const ParamInfo* p = &layout_[2 + size_t(l) * kParamsPerLayer];
  float* ptr[kParamsPerLayer];
  for (int i = 0; i < kParamsPerLayer; ++i) ptr[i] = base + (p[i].offset - base_offset);
  return {ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], ptr[5], ptr[6], ptr[7], ptr[8], ptr[9], ptr[10], ptr[11]};
}

void gpt2_init_weights(const GPT2Config& cfg, float* params, uint64_t seed, float std) {
  Rng rng(seed);
  const float residual_std = std / std::sqrt(2.0f * float(cfg.n_layer));
  for (const auto& p : gpt2_param_layout(cfg)) {
    float* dst = params + p.offset;
    const int64_t n = shape_numel(p.shape);
    const bool is_ln_weight = p.name.find("ln_") != std::string::npos && p.name.find(".weight") != std::string::npos;
    if (is_ln_weight) {
      for (int64_t i = 0; i < n; ++i) dst[i] = 1.0f;
    } else if (p.decay) {
      const bool residual_proj = p.name.find("c_proj.weight") != std::string::npos;
      const float s = residual_proj ? residual_std : std;
      int64_t real = n;
      if (p.name == "wte.weight") real = int64_t(cfg.vocab_size) * cfg.n_embd;  // padding rows stay 0
      for (int64_t i = 0; i < real; ++i) dst[i] = float(rng.normal()) * s;
      for (int64_t i = real; i < n; ++i) dst[i] = 0.0f;
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
    }
  }
}

void gpt2_check_token_ids(const int32_t* ids, int64_t n, int vocab_size, const char* what) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size)
      throw Error(ErrorKind::kData,
                  str(what, " id ", ids[i], " at position ", i, " is outside the vocabulary [0, ", vocab_size, ")"),
                  "model input", "the data was tokenized with a different vocabulary than model.vocab_size");
}

void GPT2::init_weights(uint64_t seed, float std) {
  TT_ASSERT(params_.defined(), "init_weights on a model built without a parameter buffer");
  gpt2_init_weights(cfg_, params_.data<float>(), seed, std);
}

const float* GPT2::acquire(int group, int next_group) {
  if (source_) return source_->acquire(group, next_group);
  TT_ASSERT(params_.defined(), "a model built without a parameter buffer needs set_param_source");
  return params_.data<float>() + groups_[size_t(group)].begin;
}

float* GPT2::grads_for(int group) {
  if (sink_) return sink_->grads(group);
  TT_ASSERT(grads_.defined(), "a model built without a gradient buffer needs set_grad_sink");
  return grads_.data<float>() + groups_[size_t(group)].begin;
}

void GPT2::zero_grad() {
  if (grads_.defined()) grads_.fill_zero();
}

float GPT2::forward(const int32_t* inputs, const int32_t* targets, int B, int T) {
  TT_ASSERT(B >= 1 && B <= max_batch_ && T >= 1 && T <= max_seq_, "forward B=", B, " T=", T, " exceeds the allocated ",
            max_batch_, "x", max_seq_);
  const int C = cfg_.n_embd, NH = cfg_.n_head, V = cfg_.vocab_size, Vp = cfg_.padded_vocab_size;
  const int64_t BT = int64_t(B) * T;
  gpt2_check_token_ids(inputs, BT, V, "token");
  if (targets) gpt2_check_token_ids(targets, BT, V, "target");
  last_inputs_.assign(inputs, inputs + BT);
  have_targets_ = targets != nullptr;
  if (targets) last_targets_.assign(targets, targets + BT);
  last_B_ = B;
  last_T_ = T;

  // Group 0 (the embeddings) starts at element 0, so layout offsets index it directly.
  const int L = cfg_.n_layer;
  const float* embeddings = acquire(0, 1);
  embedding_forward_cpu(acts_.encoded.data<float>(), inputs, embeddings + layout_[0].offset,
                        embeddings + layout_[1].offset, B, T, C);

  const int64_t cap_btc = int64_t(max_batch_) * max_seq_ * C;  // per-layer stride in activations
  const int64_t cap_bt = int64_t(max_batch_) * max_seq_;
  const int64_t cap_att = int64_t(max_batch_) * NH * max_seq_ * max_seq_;
  const float* residual = acts_.encoded.data<float>();
  for (int l = 0; l < L; ++l) {
    LayerParams lp = layer_params(const_cast<float*>(acquire(1 + l, 2 + l)), groups_[size_t(1 + l)].begin, l);
    float* ln1 = acts_.ln1.data<float>() + l * cap_btc;
    float* ln1_mean = acts_.ln1_mean.data<float>() + l * cap_bt;
    float* ln1_rstd = acts_.ln1_rstd.data<float>() + l * cap_bt;
    float* qkv = acts_.qkv.data<float>() + l * cap_btc * 3;
    float* atty = acts_.atty.data<float>() + l * cap_btc;
    float* att = acts_.att.data<float>() + l * cap_att;
    float* attproj = acts_.attproj.data<float>() + l * cap_btc;
    float* residual2 = acts_.residual2.data<float>() + l * cap_btc;
    float* ln2 = acts_.ln2.data<float>() + l * cap_btc;
    float* ln2_mean = acts_.ln2_mean.data<float>() + l * cap_bt;
    float* ln2_rstd = acts_.ln2_rstd.data<float>() + l * cap_bt;
    float* fch = acts_.fch.data<float>() + l * cap_btc * 4;
    float* fch_gelu = acts_.fch_gelu.data<float>() + l * cap_btc * 4;
    float* fcproj = acts_.fcproj.data<float>() + l * cap_btc;
    float* residual3 = acts_.residual3.data<float>() + l * cap_btc;

    layernorm_forward_cpu(ln1, ln1_mean, ln1_rstd, residual, lp.ln1w, lp.ln1b, int(BT), C);
    matmul_forward_cpu(qkv, ln1, lp.qkvw, lp.qkvb, int(BT), C, 3 * C);
    attention_forward_cpu(atty, att, qkv, B, T, C, NH);
    matmul_forward_cpu(attproj, atty, lp.attprojw, lp.attprojb, int(BT), C, C);
    residual_forward_cpu(residual2, residual, attproj, BT * C);
    layernorm_forward_cpu(ln2, ln2_mean, ln2_rstd, residual2, lp.ln2w, lp.ln2b, int(BT), C);
    matmul_forward_cpu(fch, ln2, lp.fcw, lp.fcb, int(BT), C, 4 * C);
    gelu_forward_cpu(fch_gelu, fch, BT * 4 * C);
    matmul_forward_cpu(fcproj, fch_gelu, lp.fcprojw, lp.fcprojb, int(BT), 4 * C, C);
    residual_forward_cpu(residual3, residual2, fcproj, BT * C);
    residual = residual3;
  }
  const ParamInfo& lnfw = layout_[layout_.size() - 2];
  const ParamInfo& lnfb = layout_[layout_.size() - 1];
  const int64_t lnf_begin = groups_[size_t(L + 1)].begin;
  const float* lnf = acquire(L + 1, 0);
  layernorm_forward_cpu(acts_.lnf.data<float>(), acts_.lnf_mean.data<float>(), acts_.lnf_rstd.data<float>(), residual,
                        lnf + (lnfw.offset - lnf_begin), lnf + (lnfb.offset - lnf_begin), int(BT), C);
  // The tied LM head; with targets a backward usually follows, which starts here and then needs L+1.
  const float* wte = acquire(0, targets ? L + 1 : -1) + layout_[0].offset;
  matmul_forward_cpu(acts_.logits.data<float>(), acts_.lnf.data<float>(), wte, nullptr, int(BT), C, Vp);
  if (!targets) return std::numeric_limits<float>::quiet_NaN();

  // Losses only; backward recomputes nothing but turns logits into dlogits in place.
  softmax_cross_entropy_cpu(acts_.losses.data<float>(), nullptr, acts_.logits.data<float>(), targets, int(BT), V, Vp,
                            0.0f);
  double sum = 0.0;
  const float* losses = acts_.losses.data<float>();
  for (int64_t i = 0; i < BT; ++i) sum += losses[i];
  return float(sum / double(BT));
}

void GPT2::report_ready(int64_t begin, int64_t end) {
  if (grad_ready_ && end > begin) grad_ready_(begin, end);
}

void GPT2::backward(float loss_scale) {
  TT_ASSERT(have_targets_, "backward() needs a forward() with targets first");
  const int B = last_B_, T = last_T_, C = cfg_.n_embd, NH = cfg_.n_head, V = cfg_.vocab_size,
            Vp = cfg_.padded_vocab_size;
  const int64_t BT = int64_t(B) * T;
  const int L = cfg_.n_layer;
  const ParamInfo& wte_info = layout_[0];
  const ParamInfo& lnfw = layout_[layout_.size() - 2];
  const ParamInfo& lnfb = layout_[layout_.size() - 1];

  // dlogits in place of the logits: (softmax - onehot) · loss_scale / BT.
  float* logits = acts_.logits.data<float>();
  softmax_cross_entropy_cpu(acts_.losses.data<float>(), logits, logits, last_targets_.data(), int(BT), V, Vp,
                            loss_scale / float(BT));
  float* dres = scratch_.dresidual.data<float>();
  float* dlnf = scratch_.dbtc.data<float>();
  zero(scratch_.dbtc, BT * C);
  const float* wte = acquire(0, L + 1) + wte_info.offset;
  float* gwte = grads_for(0) + wte_info.offset;  // group 0 starts at 0
  matmul_backward_cpu(dlnf, gwte, nullptr, logits, acts_.lnf.data<float>(), wte, int(BT), C, Vp);
  zero(scratch_.dresidual, BT * C);
  const int64_t cap_btc = int64_t(max_batch_) * max_seq_ * C;
  const int64_t cap_bt = int64_t(max_batch_) * max_seq_;
  const int64_t cap_att = int64_t(max_batch_) * NH * max_seq_ * max_seq_;
  const float* last_residual = acts_.residual3.data<float>() + (cfg_.n_layer - 1) * cap_btc;
  if (cfg_.n_layer == 0) last_residual = acts_.encoded.data<float>();
  const float* lnf = acquire(L + 1, L > 0 ? L : -1);
  const int64_t lnf_at = lnfw.offset - groups_[size_t(L + 1)].begin;
  float* glnf = grads_for(L + 1) + lnf_at;
  layernorm_backward_cpu(dres, glnf, glnf + (lnfb.offset - lnfw.offset), dlnf, last_residual, lnf + lnf_at,
                         acts_.lnf_mean.data<float>(), acts_.lnf_rstd.data<float>(), int(BT), C);
  report_ready(lnfw.offset, lnfb.offset + C);

  for (int l = L - 1; l >= 0; --l) {
    LayerParams lp = layer_params(const_cast<float*>(acquire(1 + l, l > 0 ? l : -1)), groups_[size_t(1 + l)].begin, l);
    LayerParams lg = layer_params(grads_for(1 + l), groups_[size_t(1 + l)].begin, l);
    const float* residual = l == 0 ? acts_.encoded.data<float>() : acts_.residual3.data<float>() + (l - 1) * cap_btc;
    const float* ln1 = acts_.ln1.data<float>() + l * cap_btc;
    const float* ln1_mean = acts_.ln1_mean.data<float>() + l * cap_bt;
    const float* ln1_rstd = acts_.ln1_rstd.data<float>() + l * cap_bt;
    const float* qkv = acts_.qkv.data<float>() + l * cap_btc * 3;
    const float* atty = acts_.atty.data<float>() + l * cap_btc;
    const float* att = acts_.att.data<float>() + l * cap_att;
    const float* residual2 = acts_.residual2.data<float>() + l * cap_btc;
    const float* ln2 = acts_.ln2.data<float>() + l * cap_btc;
    const float* ln2_mean = acts_.ln2_mean.data<float>() + l * cap_bt;
    const float* ln2_rstd = acts_.ln2_rstd.data<float>() + l * cap_bt;
    const float* fch = acts_.fch.data<float>() + l * cap_btc * 4;
    const float* fch_gelu = acts_.fch_gelu.data<float>() + l * cap_btc * 4;
    float* dfch_gelu = scratch_.dfch_gelu.data<float>();
    float* dfch = scratch_.dfch.data<float>();
    float* dln = scratch_.dbtc.data<float>();
    float* datty = scratch_.dbtc2.data<float>();
    float* dqkv = scratch_.dqkv.data<float>();

    // MLP: dres holds d(residual3) = d(residual2 via skip) = d(fcproj).
    zero(scratch_.dfch_gelu, BT * 4 * C);
    matmul_backward_cpu(dfch_gelu, lg.fcprojw, lg.fcprojb, dres, fch_gelu, lp.fcprojw, int(BT), 4 * C, C);
    zero(scratch_.dfch, BT * 4 * C);
    gelu_backward_cpu(dfch, fch, dfch_gelu, BT * 4 * C);
    zero(scratch_.dbtc, BT * C);
    matmul_backward_cpu(dln, lg.fcw, lg.fcb, dfch, ln2, lp.fcw, int(BT), C, 4 * C);
    layernorm_backward_cpu(dres, lg.ln2w, lg.ln2b, dln, residual2, lp.ln2w, ln2_mean, ln2_rstd, int(BT), C);
    // Attention: dres now holds d(residual2) = d(residual via skip) = d(attproj).
    zero(scratch_.dbtc2, BT * C);
    matmul_backward_cpu(datty, lg.attprojw, lg.attprojb, dres, atty, lp.attprojw, int(BT), C, C);
    zero(scratch_.dqkv, BT * 3 * C);
    attention_backward_cpu(dqkv, datty, qkv, att, B, T, C, NH);
    zero(scratch_.dbtc, BT * C);
    matmul_backward_cpu(dln, lg.qkvw, lg.qkvb, dqkv, ln1, lp.qkvw, int(BT), C, 3 * C);
    layernorm_backward_cpu(dres, lg.ln1w, lg.ln1b, dln, residual, lp.ln1w, ln1_mean, ln1_rstd, int(BT), C);

    const ParamInfo& first = layout_[2 + size_t(l) * kParamsPerLayer];
    const ParamInfo& last = layout_[2 + size_t(l) * kParamsPerLayer + kParamsPerLayer - 1];
    report_ready(first.offset, last.offset + shape_numel(last.shape));
  }
  const ParamInfo& wpe_info = layout_[1];
  float* gemb = grads_for(0);
  embedding_backward_cpu(gemb + wte_info.offset, gemb + wpe_info.offset, dres, last_inputs_.data(), B, T, C);
  report_ready(0, wpe_info.offset + shape_numel(wpe_info.shape));
}

}  // namespace tt
