// ModelSpec builders (see model_spec.h for the backward-timeline model).
#include "parallel/strategy/model_spec.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
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

ModelSpec gpt2_model_spec(const GPT2Config& cfg, int seq_len, int64_t tokens_per_rank, int accum_steps) {
  ModelSpec m;
  m.name = cfg.str();
  m.n_layer = cfg.n_layer;
  m.flops_per_token = gpt2_flops_per_token(cfg, seq_len);
  m.tokens_per_rank = tokens_per_rank;
  m.accum_steps = std::max(1, accum_steps);
  // Phases in backward order: 0 LM head, 1 final LayerNorm, 2 + (L-1-l) block l, L+2 embeddings.
  const int L = cfg.n_layer;
  const double C = cfg.n_embd;
  std::vector<double> weight(size_t(L) + 3, 0.0);
  weight[0] = 6.0 * double(cfg.vocab_size) * C;
  std::vector<Piece> pieces;
  for (const ParamInfo& p : gpt2_param_layout(cfg)) {
    const int64_t n = shape_numel(p.shape);
    int phase;
    if (p.layer < 0)
      phase = L + 2;
    else if (p.layer >= L)
      phase = 1;
    else
      phase = 2 + (L - 1 - p.layer);
    if (p.layer >= 0) weight[size_t(phase)] += 6.0 * double(n);
    pieces.push_back({n, phase});
  }
  for (int l = 0; l < L; ++l) weight[size_t(2 + l)] += 12.0 * C * seq_len;
  fill_timeline(m, pieces, weight);
  m.param_groups = group_ranges(gpt2_param_groups(cfg));
  fill_acquires(m, weight, true);
  return m;
}

ModelSpec layered_model_spec(const std::string& name, int64_t num_params, int n_layer, int hidden, int vocab,
                             int seq_len, int64_t tokens_per_rank) {
  const int64_t embed = int64_t(vocab) * hidden;
  const int64_t per_block = (num_params - 2 * embed - hidden) / n_layer;
  if (n_layer <= 0 || per_block <= 2 * hidden)
    throw Error(ErrorKind::kConfig, str("model '", name, "': ", num_params, " parameters cannot hold ", n_layer,
                                        " blocks of width ", hidden, " and a vocabulary of ", vocab));
  const int64_t matrices = per_block - 2 * hidden;
  const int64_t attn_each = matrices / 3 / 4;
  const int64_t mlp_each = (matrices - 4 * attn_each) / 3;
  ModelSpec m;
  m.name = name;
  m.n_layer = n_layer;
  m.tokens_per_rank = tokens_per_rank;
  // Phases in backward order: 0 LM head, 1 final norm, 2 + (L-1-l) block l, L+2 embeddings.
  const int L = n_layer;
  std::vector<double> weight(size_t(L) + 3, 0.0);
  weight[0] = 6.0 * double(embed);
  weight[1] = 6.0 * hidden;
  std::vector<Piece> pieces{{embed, L + 2}};
  double block_params = 0;
  for (int l = 0; l < L; ++l) {
    const int phase = 2 + (L - 1 - l);
    pieces.push_back({hidden, phase});
    for (int i = 0; i < 4; ++i) pieces.push_back({attn_each, phase});
    pieces.push_back({hidden, phase});
    for (int i = 0; i < 3; ++i) pieces.push_back({mlp_each, phase});
    block_params = double(2 * hidden + 4 * attn_each + 3 * mlp_each);
    weight[size_t(phase)] = 6.0 * block_params + 12.0 * hidden * double(seq_len);
  }
  pieces.push_back({hidden, 1});
  pieces.push_back({embed, 0});  // untied LM head: final as soon as its matmul's backward is done
  fill_timeline(m, pieces, weight);
  m.param_groups.push_back({0, embed});
  for (int l = 0; l < L; ++l)
    m.param_groups.push_back({embed + l * int64_t(block_params), embed + (l + 1) * int64_t(block_params)});
  m.param_groups.push_back({embed + L * int64_t(block_params), m.num_params});
  fill_acquires(m, weight, false);
  m.flops_per_token = 6.0 * double(m.num_params - embed) + 12.0 * L * double(hidden) * seq_len;
  return m;
}

std::vector<std::string> model_preset_names() { return {"gpt2-124m", "gpt2-350m", "llama-7b"}; }

ModelSpec model_preset(const std::string& name, int64_t tokens_per_rank) {
  ModelSpec m;
  if (name == "gpt2-124m") {
    m = gpt2_model_spec(GPT2Config::make(12, 12, 768, 50257, 1024), 1024, tokens_per_rank);
  } else if (name == "gpt2-350m") {
    m = gpt2_model_spec(GPT2Config::make(24, 16, 1024, 50257, 1024), 1024, tokens_per_rank);
  } else if (name == "llama-7b") {
    m = layered_model_spec(name, 6'738'415'616, 32, 4096, 32000, 4096, tokens_per_rank);
  } else {
    std::string names;
    for (const auto& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::kUsage, "unknown model '" + name + "'", "--model", "one of: " + names);
  }
  m.name = name;
  return m;
}

ComputeTimes compute_times(const ModelSpec& model, const cost::Cluster& cluster) {
  ComputeTimes t;
  if (model.measured_backward_s > 0) {
    t.backward_s = model.measured_backward_s;
    t.forward_s = model.measured_forward_s > 0 ? model.measured_forward_s : model.measured_backward_s / 2;
    return t;
  }
  const double peak = (model.peak_tflops > 0 ? model.peak_tflops : cluster.peak_bf16_tflops) * 1e12;
  const double mfu = model.mfu > 0 ? model.mfu : (cluster.has_gpus ? kDefaultGpuMfu : kDefaultCpuMfu);
  TT_ASSERT(peak > 0, "compute_times needs a peak FLOP/s");
  t.flops_per_s = peak * mfu;
  const double total = double(model.tokens_per_rank) * model.flops_per_token / t.flops_per_s;
  t.forward_s = total / 3;
  t.backward_s = 2 * total / 3;
  return t;
}

}  // namespace tt::strategy
