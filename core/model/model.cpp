// Forward and backward of the model (see model.h). Block l, with x_l its input:
//   n1 = norm1(x_l); qkv = n1·Wqkvᵀ (+b); RoPE(q, k); y = attention(qkv); proj = y·Woᵀ (+b)
//   x_mid = x_l + proj, n2 = norm2(x_mid)       (one fused op on CUDA)
//   pre = n2·Wupᵀ (+b), act = gelu(pre) or silu(gate)·up   (GELU in the GEMM epilogue on CUDA)
//   proj = act·Wdownᵀ (+b); x_{l+1} = x_mid + proj
// Backward carries one residual-gradient buffer (dres) through the blocks: every op's backward
// accumulates, so the norms' backward adds their input gradient straight into it.
#include "core/model/model.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/trace_recorder.h"
#include "kernels/ops/ops.h"
#include "kernels/rope/rope.h"

namespace tt {

using ops::MlpActivation;

// Activation buffers, as ActivationPlan lays them out: per-block arrays are [rows, capacity] with the
// capacity of max_batch × max_seq, whatever the batch of a call.
struct Model::Activations {
  std::vector<Tensor> t = std::vector<Tensor>(size_t(Act::kCount));
  Tensor& operator[](Act a) { return t[size_t(a)]; }
  const Tensor& operator[](Act a) const { return t[size_t(a)]; }
};

namespace {
char* bytes(const Tensor& t) { return static_cast<char*>(t.raw()); }
}  // namespace

void check_token_ids(const int32_t* ids, int64_t n, int vocab_size, const char* what) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size)
      throw Error(ErrorKind::kData,
                  str(what, " id ", ids[i], " at position ", i, " is outside the vocabulary [0, ", vocab_size, ")"),
                  "model input", "the data was tokenized with a different vocabulary than model.vocab_size");
}

Model::Model(const ModelDesc& desc, const ModelOptions& options)
    : desc_(desc),
      layout_(model_layout(desc)),
      opt_(options),
      plan_(desc, options.exec.device, options.dtype, options.max_batch, options.max_seq, options.recompute),
      acts_(std::make_unique<Activations>()) {
  if (opt_.max_seq > desc.max_seq_len)
    throw Error(ErrorKind::kConfig,
                str("sequence length ", opt_.max_seq, " exceeds the model's max_seq_len ", desc.max_seq_len),
                "train.seq_len", "lower train.seq_len or raise model.max_seq_len");
  if (!opt_.exec.is_cuda() && opt_.dtype != DType::kF32)
    throw Error(ErrorKind::kConfig, str("the CPU computes in fp32, not ", dtype_name(opt_.dtype)), "train.precision",
                "drop train.precision (or set \"fp32\") to train on the CPU");
  check_low_precision_shapes();
  set_current_device(opt_.exec.device);
  try {
    allocate();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kMemory || e.where() == "train.memory_budget_bytes") throw;  // the budget says it all
    throw Error(ErrorKind::kMemory,
                str("out of memory on ", opt_.exec.device.str(), " allocating ", desc_.str(), " for batches of ",
                    opt_.max_batch, " x ", opt_.max_seq, " tokens in ", dtype_name(opt_.dtype), " (", e.what(), ")"),
                "train.batch_size",
                "lower train.batch_size or train.seq_len (raise train.grad_accum_steps to keep the tokens per step)");
  }
}

Model::~Model() {
  if (acts_ && (*acts_)[Act::kTokens].defined()) synchronize(opt_.exec);  // nothing in flight reads freed buffers
}

void Model::allocate() {
  const ModelDesc& d = desc_;
  const Device dev = opt_.exec.device;
  const int64_t BT = int64_t(opt_.max_batch) * opt_.max_seq;
  Activations& a = *acts_;
  if (opt_.hold_params) params_ = Tensor::zeros("parameters", {layout_.numel}, opt_.dtype, dev);
  if (opt_.hold_grads) grads_ = Tensor::zeros("gradients", {layout_.numel}, opt_.dtype, dev);
  for (int i = 0; i < int(Act::kCount); ++i) {
    const ActivationBuffer& b = plan_.buffer(Act(i));
    if (!b.name.empty()) a.t[size_t(i)] = Tensor::zeros(b.name, b.shape, b.dtype, dev);
  }
  if (d.rope_positions()) {
    const int half = d.head_dim / 2;
    std::vector<float> cos(size_t(opt_.max_seq) * half), sin(cos.size());
    kernels::rope_tables(cos.data(), sin.data(), opt_.max_seq, kernels::rope_inv_freq(d.head_dim, d.rope));
    copy_async(opt_.exec, a[Act::kRopeCos].raw(), cos.data(), cos.size() * sizeof(float));
    copy_async(opt_.exec, a[Act::kRopeSin].raw(), sin.data(), sin.size() * sizeof(float));
  }
  const LowPrecisionOptions& lp = opt_.low_precision;
  if (lp.matmul == ops::MatmulPrecision::kFp8)
    lowp_ = std::make_unique<LowPrecisionState>(kSitesPerBlock * d.n_layer + (lp.lm_head ? 1 : 0), lp.amax_history_len,
                                                lp.margin, opt_.exec);
  token_staging_ = std::make_unique<HostStaging>(opt_.exec, size_t(BT) * sizeof(int32_t));
  target_staging_ = std::make_unique<HostStaging>(opt_.exec, size_t(BT) * sizeof(int32_t));
  synchronize(opt_.exec);
}

void Model::check_low_precision_shapes() const {
  const LowPrecisionOptions& lp = opt_.low_precision;
  if (lp.matmul == ops::MatmulPrecision::kDefault || !opt_.exec.is_cuda()) return;
  // The tensor cores' fp8 / int8 GEMMs take dimensions in multiples of 16 (the CPU emulation any).
  const ModelDesc& d = desc_;
  const std::pair<const char*, int64_t> dims[] = {
      {"model.n_embd", d.n_embd},          {"model.n_head x head_dim (q width)", d.q_dim()},
      {"the q/k/v width", d.qkv_dim()},    {"model.mlp_hidden", d.mlp_hidden},
      {"train.batch_size x train.seq_len", int64_t(opt_.max_batch) * opt_.max_seq}};
  for (const auto& [what, value] : dims)
    if (value % 16 != 0)
      throw Error(ErrorKind::kConfig,
                  str("train.matmul_precision \"", ops::matmul_precision_name(lp.matmul), "\" on a GPU needs ", what,
                      " to be a multiple of 16 (it is ", value, ")"),
                  "train.matmul_precision", "change the model or batch shape, or use train.matmul_precision \"default\"");
}

ops::LinearPrecision Model::linear(int l, LinearSite site) const {
  if (lowp_) return lowp_->site(kSitesPerBlock * l + int(site));
  return {opt_.low_precision.matmul};
}

ops::LinearPrecision Model::head_linear() const {
  if (!opt_.low_precision.lm_head) return {};
  if (lowp_) return lowp_->site(kSitesPerBlock * desc_.n_layer);
  return {opt_.low_precision.matmul};
}

const void* Model::acquire(int group, int next_group) {
  if (source_) return source_->acquire(group, next_group);
  TT_ASSERT(params_.defined(), "a model built without a parameter buffer needs set_param_source");
  return bytes(params_) + layout_.groups[size_t(group)].begin * int64_t(dtype_size(opt_.dtype));
}

void* Model::grads_of(int group) {
  if (sink_) return sink_->grads(group);
  TT_ASSERT(grads_.defined(), "a model built without a gradient buffer needs set_grad_sink");
  return bytes(grads_) + layout_.groups[size_t(group)].begin * int64_t(dtype_size(opt_.dtype));
}

void Model::zero_grad() {
  if (grads_.defined()) zero_async(opt_.exec, grads_.raw(), grads_.nbytes());
}

void Model::report_ready(int group) {
  const ParamGroup& g = layout_.groups[size_t(group)];
  if (grad_ready_ && g.end > g.begin) grad_ready_(g.begin, g.end);
}

// Pointers into one parameter (or gradient) group at `base`, whose first element is `group_begin`.
struct Model::GroupPtr {
  char* base;
  int64_t group_begin;
  size_t esize;
  void* operator()(int64_t offset) const {
    return offset < 0 ? nullptr : base + (offset - group_begin) * int64_t(esize);
  }
};

Model::GroupPtr Model::acquire_ptr(int group, int next_group) {
  return {const_cast<char*>(static_cast<const char*>(acquire(group, next_group))), layout_.groups[size_t(group)].begin,
          dtype_size(opt_.dtype)};
}

Model::BlockActs Model::block_acts(int l) const {
  const Activations& a = *acts_;
  const int64_t es = int64_t(dtype_size(opt_.dtype));
  auto at = [&](Act k) { return bytes(a[k]) + plan_.row(l, k) * plan_.elements_per_row(k) * es; };
  auto stat = [&](Act k) {
    return a[k].defined() ? a[k].data<float>() + plan_.row(l, k) * plan_.elements_per_row(k) : nullptr;
  };
  const int64_t residual_row = int64_t(opt_.max_batch) * opt_.max_seq * desc_.n_embd * es;
  BlockActs b;
  b.x_in = bytes(a[Act::kResidual]) + l * residual_row;
  b.x_out = b.x_in + residual_row;
  b.n1 = at(Act::kNorm1);
  b.qkv = at(Act::kQkv);
  b.atty = at(Act::kAttOut);
  b.xmid = at(Act::kResidualMid);
  b.n2 = at(Act::kNorm2);
  b.pre = at(Act::kMlpPre);
  b.act = at(Act::kMlpAct);
  b.n1_mean = stat(Act::kNorm1Mean);
  b.n1_rstd = stat(Act::kNorm1Rstd);
  b.n2_mean = stat(Act::kNorm2Mean);
  b.n2_rstd = stat(Act::kNorm2Rstd);
  b.stats = stat(Act::kAttStats);
  return b;
}

void Model::forward(const int32_t* inputs, const int32_t* targets, int B, int T) {
  TT_ASSERT(B >= 1 && B <= opt_.max_batch && T >= 1 && T <= opt_.max_seq, "forward B=", B, " T=", T,
            " exceeds the allocated ", opt_.max_batch, "x", opt_.max_seq);
  const ModelDesc& d = desc_;
  Activations& a = *acts_;
  const Exec& e = opt_.exec;
  const DType dt = opt_.dtype;
  const int64_t BT = int64_t(B) * T;
  const int L = d.n_layer, C = d.n_embd;
  check_token_ids(inputs, BT, d.vocab_size, "token");
  if (targets) check_token_ids(targets, BT, d.vocab_size, "target");
  token_staging_->upload(a[Act::kTokens].raw(), inputs, size_t(BT) * sizeof(int32_t));
  if (targets) target_staging_->upload(a[Act::kTargets].raw(), targets, size_t(BT) * sizeof(int32_t));
  last_B_ = B;
  last_T_ = T;
  have_targets_ = targets != nullptr;

  const GroupPtr emb = acquire_ptr(0, 1);
  ops::embedding_forward(e, dt, a[Act::kResidual].raw(), a[Act::kTokens].data<int32_t>(), emb(layout_.tok_emb),
                         emb(layout_.pos_emb), B, T, C);
  for (int l = 0; l < L; ++l) {  // leaves scratch_block_ at the last recomputing one
    trace::ScopedSpan span("forward block", l, "forward");
    run_block_forward(l, l + 2);
  }

  const int fin = layout_.final_group();
  const GroupPtr gf = acquire_ptr(fin, d.tied_head ? 0 : -1);
  const int64_t cap = int64_t(opt_.max_batch) * opt_.max_seq;
  ops::norm_forward(e, dt, d.norm, a[Act::kNormF].raw(), d.layer_norm() ? a[Act::kNormFMean].data<float>() : nullptr,
                    a[Act::kNormFRstd].data<float>(), bytes(a[Act::kResidual]) + L * cap * C * int64_t(dtype_size(dt)),
                    gf(layout_.final_norm_w), gf(layout_.final_norm_b), int(BT), C);
  const void* head = nullptr;
  if (d.tied_head) {
    // With targets a backward usually follows; it starts with the head and then needs the final group.
    head = acquire_ptr(0, targets ? fin : -1)(layout_.lm_head);
  } else {
    head = gf(layout_.lm_head);
  }
  ops::linear_forward(e, dt, a[Act::kLogits].raw(), a[Act::kNormF].raw(), head, nullptr, int(BT), C,
                      d.padded_vocab_size, head_linear());
  if (!targets) return;
  ops::softmax_cross_entropy(e, dt, a[Act::kLosses].data<float>(), nullptr, a[Act::kLogits].raw(),
                             a[Act::kTargets].data<int32_t>(), int(BT), d.vocab_size, d.padded_vocab_size, 0.0f);
  ops::add_mean(e, a[Act::kLossSum].data<float>(), a[Act::kLosses].data<float>(), BT);
}

void Model::forward_block(int l) {
  TT_ASSERT(last_B_ > 0 && l >= 0 && l < desc_.n_layer, "forward_block(", l, ") needs a forward first");
  run_block_forward(l, -1);
}

void Model::run_block_forward(int l, int next_group) {
  const Activations& a = *acts_;
  const ModelDesc& d = desc_;
  const Exec& e = opt_.exec;
  const DType dt = opt_.dtype;
  const int64_t BT = int64_t(last_B_) * last_T_;
  const BlockOffsets& o = layout_.blocks[size_t(l)];
  const GroupPtr p = acquire_ptr(1 + l, next_group);
  const BlockActs b = block_acts(l);
  block_forward_to_mlp(l, p, b);
  if (plan_.recomputes_block(l)) scratch_block_ = l;
  void* proj = a[Act::kProjection].raw();
  ops::linear_forward(e, dt, proj, b.act, p(o.down_w), p(o.down_b), int(BT), d.mlp_hidden, d.n_embd,
                      linear(l, LinearSite::kDown));
  ops::residual_forward(e, dt, b.x_out, b.xmid, proj, BT * d.n_embd);
}

void Model::block_forward_to_mlp(int l, const GroupPtr& p, const BlockActs& b) {
  const ModelDesc& d = desc_;
  const Activations& a = *acts_;
  const Exec& e = opt_.exec;
  const DType dt = opt_.dtype;
  const int B = last_B_, T = last_T_, C = d.n_embd;
  const int64_t BT = int64_t(B) * T;
  const kernels::AttentionShape shape{B, T, d.n_head, d.n_kv_head, d.head_dim};
  const BlockOffsets& o = layout_.blocks[size_t(l)];
  void* proj = a[Act::kProjection].raw();
  ops::norm_forward(e, dt, d.norm, b.n1, b.n1_mean, b.n1_rstd, b.x_in, p(o.norm1_w), p(o.norm1_b), int(BT), C);
  ops::linear_forward(e, dt, b.qkv, b.n1, p(o.qkv_w), p(o.qkv_b), int(BT), C, d.qkv_dim(), linear(l, LinearSite::kQkv));
  if (d.rope_positions())
    ops::rope_forward(e, dt, b.qkv, a[Act::kRopeCos].data<float>(), a[Act::kRopeSin].data<float>(), shape);
  ops::attention_forward(e, dt, b.atty, b.stats, b.qkv, shape);
  ops::linear_forward(e, dt, proj, b.atty, p(o.out_w), p(o.out_b), int(BT), d.q_dim(), C, linear(l, LinearSite::kOut));
  ops::residual_norm_forward(e, dt, d.norm, b.xmid, b.n2, b.n2_mean, b.n2_rstd, b.x_in, proj, p(o.norm2_w),
                             p(o.norm2_b), int(BT), C);
  ops::mlp_up_forward(e, dt, d.mlp, b.act, b.pre, b.n2, p(o.up_w), p(o.up_b), int(BT), C, d.mlp_up_dim(),
                      linear(l, LinearSite::kUp));
}

void Model::recompute_block(int l, const GroupPtr& p, const BlockActs& b) {
  if (!plan_.recomputes_block(l) || scratch_block_ == l) return;
  scratch_block_ = l;
  if (plan_.mode() == RecomputeMode::kFull) {
    block_forward_to_mlp(l, p, b);
    return;
  }
  // Selective: the kept tensors (x_l, q/k/v after RoPE, attention output, x_mid, the MLP's
  // pre-activation, norm statistics) rebuild the others as forward made them.
  const ModelDesc& d = desc_;
  const Exec& e = opt_.exec;
  const DType dt = opt_.dtype;
  const int B = last_B_, T = last_T_, C = d.n_embd;
  const int64_t BT = int64_t(B) * T;
  const BlockOffsets& o = layout_.blocks[size_t(l)];
  ops::norm_forward(e, dt, d.norm, b.n1, b.n1_mean, b.n1_rstd, b.x_in, p(o.norm1_w), p(o.norm1_b), int(BT), C);
  if (plan_.recomputed(l, Act::kAttStats))
    ops::attention_forward(e, dt, b.atty, b.stats, b.qkv, {B, T, d.n_head, d.n_kv_head, d.head_dim});
  ops::norm_forward(e, dt, d.norm, b.n2, b.n2_mean, b.n2_rstd, b.xmid, p(o.norm2_w), p(o.norm2_b), int(BT), C);
  ops::mlp_activation_forward(e, dt, d.mlp, b.act, b.pre, int(BT), d.mlp_up_dim());
}

float Model::take_loss_sum() {
  float sum = 0.0f;
  copy_sync(opt_.exec, &sum, (*acts_)[Act::kLossSum].raw(), sizeof(float));
  zero_async(opt_.exec, (*acts_)[Act::kLossSum].raw(), sizeof(float));
  return sum;
}

void Model::backward(float loss_scale) {
  TT_ASSERT(have_targets_, "backward() needs a forward() with targets first");
  const ModelDesc& d = desc_;
  Activations& a = *acts_;
  const Exec& e = opt_.exec;
  const DType dt = opt_.dtype;
  const size_t es = dtype_size(dt);
  const int B = last_B_, T = last_T_, C = d.n_embd, L = d.n_layer, Vp = d.padded_vocab_size;
  const int64_t BT = int64_t(B) * T, cap = int64_t(opt_.max_batch) * opt_.max_seq;
  const int fin = layout_.final_group();

  // dlogits in place of the logits: (softmax - onehot) · loss_scale / BT.
  ops::softmax_cross_entropy(e, dt, nullptr, a[Act::kLogits].raw(), a[Act::kLogits].raw(),
                             a[Act::kTargets].data<int32_t>(), int(BT), d.vocab_size, Vp, loss_scale / float(BT));
  zero_async(e, a[Act::kDNorm].raw(), size_t(BT) * C * es);
  const GroupPtr head_p = d.tied_head ? acquire_ptr(0, fin) : acquire_ptr(fin, L > 0 ? L : -1);
  const int head_group = d.tied_head ? 0 : fin;
  const GroupPtr head_g{static_cast<char*>(grads_of(head_group)), layout_.groups[size_t(head_group)].begin, es};
  ops::linear_backward(e, dt, a[Act::kDNorm].raw(), head_g(layout_.lm_head), nullptr, a[Act::kLogits].raw(),
                       a[Act::kNormF].raw(), head_p(layout_.lm_head), int(BT), C, Vp, head_linear());
  const GroupPtr fp = d.tied_head ? acquire_ptr(fin, L > 0 ? L : -1) : head_p;
  const GroupPtr fg{static_cast<char*>(grads_of(fin)), layout_.groups[size_t(fin)].begin, es};
  zero_async(e, a[Act::kDResidual].raw(), size_t(BT) * C * es);
  ops::norm_backward(e, dt, d.norm, a[Act::kDResidual].raw(), fg(layout_.final_norm_w), fg(layout_.final_norm_b),
                     a[Act::kDNorm].raw(), bytes(a[Act::kResidual]) + L * cap * C * int64_t(es),
                     fp(layout_.final_norm_w), d.layer_norm() ? a[Act::kNormFMean].data<float>() : nullptr,
                     a[Act::kNormFRstd].data<float>(), int(BT), C);
  report_ready(fin);

  for (int l = L - 1; l >= 0; --l) {
    trace::ScopedSpan span("backward block", l, "backward");
    run_block_backward(l, l > 0 ? l : -1);
  }

  const GroupPtr g0{static_cast<char*>(grads_of(0)), layout_.groups[0].begin, es};
  ops::embedding_backward(e, dt, g0(layout_.tok_emb), g0(layout_.pos_emb), a[Act::kDResidual].raw(),
                          a[Act::kTokens].data<int32_t>(), B, T, C, Vp);
  report_ready(0);
}

void Model::run_block_backward(int l, int next_group) {
  const ModelDesc& d = desc_;
  Activations& a = *acts_;
  const Exec& e = opt_.exec;
  const DType dt = opt_.dtype;
  const size_t es = dtype_size(dt);
  const int B = last_B_, T = last_T_, C = d.n_embd;
  const int64_t BT = int64_t(B) * T;
  const kernels::AttentionShape shape{B, T, d.n_head, d.n_kv_head, d.head_dim};
  const BlockOffsets& o = layout_.blocks[size_t(l)];
  const GroupPtr p = acquire_ptr(1 + l, next_group);
  const GroupPtr g{static_cast<char*>(grads_of(1 + l)), p.group_begin, es};
  const BlockActs b = block_acts(l);
  recompute_block(l, p, b);
  void* dres = a[Act::kDResidual].raw();

  // MLP: dres holds d(x_{l+1}) = d(x_mid via the skip) = d(down projection output).
  ops::mlp_down_backward(e, dt, d.mlp, a[Act::kDMlpPre].raw(), g(o.down_w), g(o.down_b), a[Act::kDMlpAct].raw(), dres,
                         b.act, p(o.down_w), b.pre, int(BT), d.mlp_hidden, C, linear(l, LinearSite::kDown));
  zero_async(e, a[Act::kDNorm].raw(), size_t(BT) * C * es);
  ops::linear_backward(e, dt, a[Act::kDNorm].raw(), g(o.up_w), g(o.up_b), a[Act::kDMlpPre].raw(), b.n2, p(o.up_w),
                       int(BT), C, d.mlp_up_dim(), linear(l, LinearSite::kUp));
  ops::norm_backward(e, dt, d.norm, dres, g(o.norm2_w), g(o.norm2_b), a[Act::kDNorm].raw(), b.xmid, p(o.norm2_w),
                     b.n2_mean, b.n2_rstd, int(BT), C);
  // Attention: dres now holds d(x_mid) = d(x_l via the skip) = d(output projection).
  zero_async(e, a[Act::kDAttOut].raw(), size_t(BT) * d.q_dim() * es);
  ops::linear_backward(e, dt, a[Act::kDAttOut].raw(), g(o.out_w), g(o.out_b), dres, b.atty, p(o.out_w), int(BT),
                       d.q_dim(), C, linear(l, LinearSite::kOut));
  zero_async(e, a[Act::kDQkv].raw(), size_t(BT) * d.qkv_dim() * es);
  ops::attention_backward(e, dt, a[Act::kDQkv].raw(), a[Act::kDAttOut].raw(), b.qkv, b.atty, b.stats, shape);
  if (d.rope_positions())
    ops::rope_backward(e, dt, a[Act::kDQkv].raw(), a[Act::kRopeCos].data<float>(), a[Act::kRopeSin].data<float>(),
                       shape);
  zero_async(e, a[Act::kDNorm].raw(), size_t(BT) * C * es);
  ops::linear_backward(e, dt, a[Act::kDNorm].raw(), g(o.qkv_w), g(o.qkv_b), a[Act::kDQkv].raw(), b.n1, p(o.qkv_w),
                       int(BT), C, d.qkv_dim(), linear(l, LinearSite::kQkv));
  ops::norm_backward(e, dt, d.norm, dres, g(o.norm1_w), g(o.norm1_b), a[Act::kDNorm].raw(), b.x_in, p(o.norm1_w),
                     b.n1_mean, b.n1_rstd, int(BT), C);
  report_ready(1 + l);
}

std::vector<float> Model::logits_at(int b, int t) const {
  TT_ASSERT(b >= 0 && b < last_B_ && t >= 0 && t < last_T_, "logits_at(", b, ", ", t, ") outside the last forward's ",
            last_B_, "x", last_T_);
  const int V = desc_.vocab_size;
  const size_t es = dtype_size(opt_.dtype);
  const int64_t row = int64_t(b) * last_T_ + t;
  std::vector<char> raw(static_cast<size_t>(V) * es);
  copy_sync(opt_.exec, raw.data(), bytes((*acts_)[Act::kLogits]) + row * desc_.padded_vocab_size * int64_t(es),
            raw.size());
  std::vector<float> out(static_cast<size_t>(V));
  if (opt_.dtype == DType::kF32) {
    std::memcpy(out.data(), raw.data(), raw.size());
  } else {
    const auto* bits = reinterpret_cast<const uint16_t*>(raw.data());
    for (int i = 0; i < V; ++i) out[size_t(i)] = bf16_to_f32(bits[i]);
  }
  return out;
}

}  // namespace tt
