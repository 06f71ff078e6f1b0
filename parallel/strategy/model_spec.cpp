// ModelSpec builders (see model_spec.h for the backward-timeline model).
#include "parallel/strategy/model_spec.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/model/param_layout.h"
#include "parallel/ddp/window_slots.h"

namespace tt::strategy {

namespace {

// A tensor in buffer order with the backward phase that finishes it.
struct Piece {
  int64_t elems;
  int phase;  // index into the phase list, in backward order
};

// Turns pieces + per-phase FLOP weights (backward order) into ranges and ready fractions.
void fill_timeline(ModelSpec& m, const std::vector<Piece>& pieces, const std::vector<double>& phase_weight) {
  double total = 0;
  for (double w : phase_weight) total += w;
  std::vector<double> end_fraction(phase_weight.size());
  double acc = 0;
  for (size_t i = 0; i < phase_weight.size(); ++i) {
    acc += phase_weight[i];
    end_fraction[i] = total > 0 ? std::min(1.0, acc / total) : 1.0;
  }
  int64_t at = 0;
  for (const Piece& p : pieces) {
    m.tensor_ranges.push_back({at, at + p.elems});
    m.ready_fraction.push_back(end_fraction[size_t(p.phase)]);
    at += p.elems;
  }
  m.num_params = at;
}

// ZeRO-3 acquire orders from the backward-order phase weights (0 LM head, 1 final norm, 2 + (L-1-l)
// block l, L + 2 embeddings) and the group cut: 0 embeddings, 1 + l block l, L + 1 the rest. A tied
// LM head reads group 0 again at the end of forward and first in backward; an untied one lives in
// group L + 1 with the final norm. The embedding backward reads no parameters.
void fill_acquires(ModelSpec& m, const std::vector<double>& weight, bool tied_head) {
  const int L = m.n_layer;
  double total = 0;
  for (double w : weight) total += w;
  auto share = [&](double w) { return total > 0 ? w / total : 0.0; };
  const double head = share(weight[0]), final_norm = share(weight[1]);
  m.forward_acquires.push_back({0, 0.0});
  for (int l = 0; l < L; ++l) m.forward_acquires.push_back({1 + l, share(weight[size_t(2 + (L - 1 - l))])});
  if (tied_head) {
    m.forward_acquires.push_back({L + 1, final_norm});
    m.forward_acquires.push_back({0, head});
    m.backward_acquires.push_back({0, head});
    m.backward_acquires.push_back({L + 1, final_norm});
    m.resident_groups = {0};
  } else {
    m.forward_acquires.push_back({L + 1, final_norm + head});
    m.backward_acquires.push_back({L + 1, final_norm + head});
  }
  for (int l = L - 1; l >= 0; --l) m.backward_acquires.push_back({1 + l, share(weight[size_t(2 + (L - 1 - l))])});
}

}  // namespace

int64_t zero3_window_elements(const ModelSpec& model) {
  if (model.param_groups.empty()) return 0;
  std::vector<int64_t> sizes;
  for (const auto& [begin, end] : model.param_groups) sizes.push_back(end - begin);
  const std::vector<int64_t> buffers = parallel::WindowSlots(model.resident_groups).buffer_sizes(sizes);
  return std::accumulate(buffers.begin(), buffers.end(), int64_t(0));
}

ModelSpec model_spec(const ModelDesc& desc, int seq_len, int64_t tokens_per_rank, int accum_steps) {
  const ModelLayout layout = model_layout(desc);
  ModelSpec m;
  m.name = desc.str();
  m.n_layer = desc.n_layer;
  m.flops_per_token = model_flops_per_token(desc, seq_len);
  m.tokens_per_rank = tokens_per_rank;
  m.accum_steps = std::max(1, accum_steps);
  // Phases in backward order: 0 LM head, 1 final norm, 2 + (L-1-l) block l, L+2 embeddings.
  const int L = desc.n_layer;
  std::vector<double> weight(size_t(L) + 3, 0.0);
  weight[0] = 6.0 * double(desc.vocab_size) * desc.n_embd;
  std::vector<Piece> pieces;
  for (const ParamInfo& p : layout.tensors) {
    const int64_t n = shape_numel(p.shape);
    int phase;
    if (p.offset == layout.lm_head && !desc.tied_head)
      phase = 0;  // an untied head's gradient is final once its matmul's backward is done
    else if (p.group == 0)
      phase = L + 2;
    else if (p.group == layout.final_group())
      phase = 1;
    else
      phase = 2 + (L - 1 - (p.group - 1));
    if (p.group > 0 && phase != 0) weight[size_t(phase)] += 6.0 * double(n);
    pieces.push_back({n, phase});
  }
  for (int l = 0; l < L; ++l) weight[size_t(2 + l)] += 12.0 * double(desc.q_dim()) * seq_len;
  fill_timeline(m, pieces, weight);
  m.param_groups = group_ranges(layout.groups);
  fill_acquires(m, weight, desc.tied_head);
  m.has_desc = true;
  m.desc = desc;
  m.seq_len = seq_len;
  if (L > 0) {
    const int64_t block_params = layout.groups[1].end - layout.groups[1].begin;
    m.block_attention_flops = 4.0 * double(desc.q_dim()) * seq_len;
    m.block_forward_flops = 2.0 * double(block_params) + m.block_attention_flops;
    m.block_down_proj_flops = 2.0 * double(desc.mlp_hidden) * desc.n_embd;
  }
  // Block linears: (in, out) of q/k/v, the attention output, the MLP up (gate and up) and down.
  const double C = desc.n_embd;
  const std::pair<double, double> linears[] = {
      {C, desc.qkv_dim()}, {desc.q_dim(), C}, {C, desc.mlp_up_dim()}, {desc.mlp_hidden, C}};
  for (const auto& [in, out] : linears) {
    m.linear_flops_per_token += L * 6.0 * in * out;
    m.linear_io_per_token += L * (in + out);
    m.linear_weights += int64_t(L * in * out);
  }
  return m;
}

int ModelSpec::micro_batch() const {
  if (seq_len <= 0) return 0;
  return int(std::max<int64_t>(1, tokens_per_rank / std::max(1, accum_steps) / seq_len));
}

ModelSpec preset_model_spec(const std::string& name, int64_t tokens_per_rank) {
  const ModelDesc desc = model_preset(name);
  ModelSpec m = model_spec(desc, std::min(desc.max_seq_len, 4096), tokens_per_rank);
  m.name = name;
  return m;
}

std::vector<ops::MatmulPrecision> available_precisions(const cost::Cluster& cluster) {
  std::vector<ops::MatmulPrecision> out{ops::MatmulPrecision::kDefault};
  if (!cluster.has_gpus) return out;
  if (cluster.peak_int8_tops > 0) out.push_back(ops::MatmulPrecision::kInt8);
  if (cluster.peak_fp8_tflops > 0) out.push_back(ops::MatmulPrecision::kFp8);
  return out;
}

ComputeTimes compute_times(const ModelSpec& model, const cost::Cluster& cluster, ops::MatmulPrecision precision) {
  ComputeTimes t;
  t.precision = precision;
  if (model.measured_backward_s > 0) {
    t.backward_s = model.measured_backward_s;
    t.forward_s = model.measured_forward_s > 0 ? model.measured_forward_s : model.measured_backward_s / 2;
    return t;
  }
  const double peak = (model.peak_tflops > 0 ? model.peak_tflops : cluster.peak_bf16_tflops) * 1e12;
  const double mfu = model.mfu > 0                           ? model.mfu
                     : !cluster.has_gpus                        ? kDefaultCpuMfu
                     : cluster.training_efficiency > 0          ? cluster.training_efficiency
                                                                : kDefaultGpuMfu;
  TT_ASSERT(peak > 0, "compute_times needs a peak FLOP/s");
  t.flops_per_s = peak * mfu;
  const double tokens = double(model.tokens_per_rank);
  double forward = tokens * model.flops_per_token / 3 / t.flops_per_s, backward = 2 * forward;
  if (precision != ops::MatmulPrecision::kDefault) {
    const bool fp8 = precision == ops::MatmulPrecision::kFp8;
    const double mode_peak = (fp8 ? cluster.peak_fp8_tflops : cluster.peak_int8_tops) * 1e12;
    TT_ASSERT(mode_peak > 0, "compute_times: the cluster's GPU has no ", ops::matmul_precision_name(precision));
    const double low_rate = mode_peak * mfu * kLowPrecisionGemmEfficiency;
    const double lin = tokens * model.linear_flops_per_token / 3;  // one of the three GEMMs, all layers
    // Forward GEMM, and backward's input gradient (both modes) and weight gradient (fp8 only).
    forward += lin / low_rate - lin / t.flops_per_s;
    backward += (fp8 ? 2 : 1) * (lin / low_rate - lin / t.flops_per_s);
    // Quantisation: activations every micro-step (forward: inputs; backward: output gradients and
    // the re-quantised inputs), weights every micro-step.
    const double bw = cluster.mem_bw_gbps * 1e9;
    const double elems = tokens * model.linear_io_per_token + double(model.accum_steps) * double(model.linear_weights);
    forward += elems / 2 * kQuantiseBytesPerElement / bw;
    backward += elems * kQuantiseBytesPerElement / bw;
  }
  t.forward_s = forward;
  t.backward_s = backward;
  return t;
}

}  // namespace tt::strategy
