// The model layer on the CPU: descriptions and their presets, parameter layouts (Hugging Face names,
// groups), whole-model finite-difference gradient checks for GPT-2 and Llama-style descriptions (GQA,
// MQA, RoPE with Llama 3 scaling, SwiGLU, untied heads, biases), the grad-ready and ParamSource /
// GradSink contracts ZeRO-3 builds on, re-running a block from its input, and per-range
// initialisation.
#include "core/model/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/model/init_weights.h"
#include "core/rng.h"

namespace tt {
namespace {

struct Batch {
  std::vector<int32_t> inputs, targets;
};

Batch random_batch(int B, int T, int V, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  for (int i = 0; i < B * T; ++i) {
    b.inputs.push_back(int32_t(rng.next_u64() % uint64_t(V)));
    b.targets.push_back(int32_t(rng.next_u64() % uint64_t(V)));
  }
  return b;
}

ModelOptions options(int B, int T, bool hold_params = true, bool hold_grads = true) {
  ModelOptions o;
  o.max_batch = B;
  o.max_seq = T;
  o.hold_params = hold_params;
  o.hold_grads = hold_grads;
  return o;
}

// The model's initial weights, with a larger std so that gradients are far from zero.
void init(Model& m, uint64_t seed, float std = 0.3f) {
  ModelDesc d = m.desc();
  d.init_std = std;
  init_weights(d, m.layout(), seed, 0, m.num_params(), m.params().data<float>());
}

float loss_of(Model& m, const Batch& b, int B, int T) {
  m.forward(b.inputs.data(), b.targets.data(), B, T);
  return m.take_loss_sum();
}

// Small descriptions of every structural variant the finite-difference check covers.
std::vector<ModelDesc> small_descs() {
  std::vector<ModelDesc> out;
  out.push_back(gpt2_desc(2, 2, 8, 11, 6));
  ModelDesc gqa = llama_desc(2, 4, 2, 16, 11, 6, 24);  // GQA, RoPE, SwiGLU, untied
  out.push_back(gqa);
  ModelDesc mqa = llama_desc(1, 4, 1, 16, 11, 6, 16);
  mqa.rope.theta = 500.0f;
  mqa.rope.scaling_factor = 8.0f;  // Llama 3.1 frequency scaling with a short original context
  mqa.rope.original_max_seq_len = 4;
  out.push_back(mqa);
  ModelDesc hybrid = gpt2_desc(1, 2, 8, 11, 6);  // relatives: mixed structure, biases, explicit head_dim
  hybrid.norm.kind = ops::NormKind::kRMSNorm;
  hybrid.mlp = ops::MlpActivation::kSwiGLU;
  hybrid.mlp_hidden = 12;
  hybrid.tied_head = false;
  hybrid.head_dim = 6;
  hybrid.n_kv_head = 1;
  out.push_back(hybrid);
  ModelDesc qkv_bias = llama_desc(1, 2, 2, 8, 11, 6, 8);  // Qwen-style: q/k/v biases only
  qkv_bias.qkv_bias = true;
  qkv_bias.tied_head = true;
  out.push_back(qkv_bias);
  return out;
}

TEST(ModelDesc, PresetsHaveThePublishedParameterCounts) {
  auto real = [](const ModelDesc& d) {  // without the vocabulary padding
    const int64_t pad = int64_t(d.padded_vocab_size - d.vocab_size) * d.n_embd;
    return model_num_params(d) - pad * (d.tied_head ? 1 : 2);
  };
  EXPECT_EQ(real(model_preset("gpt2-124m")), 124439808);
  EXPECT_EQ(real(model_preset("tinyllama-1.1b")), 1100048384);  // TinyLlama-1.1B: 22 layers, GQA 32/4
  EXPECT_EQ(real(model_preset("llama2-7b")), 6738415616);
  EXPECT_EQ(real(model_preset("llama3-8b")), 8030261248);
  EXPECT_EQ(real(model_preset("mistral-7b")), 7241732096);
  EXPECT_EQ(model_preset("llama3-8b").n_kv_head, 8);
  EXPECT_NEAR(model_flops_per_token(model_preset("gpt2-124m"), 1024), 0.86e9, 0.02e9);  // 6N + 12LdT
  EXPECT_THROW(model_preset("gpt5"), Error);
}

TEST(ModelDesc, ConfigFieldsOverrideTheArchPreset) {
  config::ModelConfig m;
  m.set_arch("llama");
  m.set_n_layer(2);
  m.set_n_head(4);
  m.set_n_embd(64);
  m.set_vocab_size(32);
  m.set_max_seq_len(64);
  ModelDesc d = model_desc_from_config(m);
  EXPECT_EQ(d.n_kv_head, 4);
  EXPECT_EQ(d.head_dim, 16);
  EXPECT_EQ(d.mlp_hidden, 256);  // 256 * ceil(8/3 * 64 / 256)
  EXPECT_TRUE(d.rope_positions());
  EXPECT_FALSE(d.tied_head);
  m.set_n_kv_head(1);
  m.set_mlp("gelu");
  m.set_tied_head(true);
  m.set_norm_eps(1e-6f);
  m.mutable_rope_scaling()->set_factor(8);
  d = model_desc_from_config(m);
  EXPECT_EQ(d.n_kv_head, 1);
  EXPECT_EQ(d.mlp, ops::MlpActivation::kGeluTanh);
  EXPECT_EQ(d.mlp_hidden, 256);  // GELU's rule: 4 x n_embd
  EXPECT_TRUE(d.tied_head);
  EXPECT_FLOAT_EQ(d.norm.eps, 1e-6f);
  EXPECT_EQ(d.rope.original_max_seq_len, 8192);
  m.set_n_kv_head(3);
  try {
    model_desc_from_config(m);
    FAIL() << "n_head 4 with n_kv_head 3 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_EQ(e.where(), "model.n_kv_head");
  }
}

TEST(ModelLayout, Gpt2NamesAndOrderFollowHuggingFace) {
  const ModelDesc cfg = gpt2_desc(2, 2, 8, 11, 6);
  EXPECT_EQ(cfg.padded_vocab_size, 128);
  const ModelLayout layout = model_layout(cfg);
  int64_t expected = 0;
  for (const auto& p : layout.tensors) {
    EXPECT_EQ(p.offset, expected) << p.name;
    expected += shape_numel(p.shape);
    EXPECT_EQ(p.decay, p.shape.size() == 2) << p.name;
  }
  EXPECT_EQ(expected, layout.numel);
  EXPECT_EQ(layout.tensors.front().name, "wte.weight");
  EXPECT_EQ(layout.tensors[2].name, "h.0.ln_1.weight");
  EXPECT_EQ(layout.find("h.1.attn.c_attn.weight").shape, (Shape{24, 8}));
  EXPECT_EQ(layout.tensors.back().name, "ln_f.bias");
  EXPECT_EQ(layout.lm_head, layout.tok_emb);
  EXPECT_EQ(layout.reused_groups, std::vector<int>{0});
  ASSERT_EQ(layout.groups.size(), 4u);                      // embeddings, 2 blocks, final
  EXPECT_EQ(layout.groups[1].size(), 12 * 8 * 8 + 13 * 8);  // one block: 12C² + 13C
  EXPECT_EQ(layout.groups.back().size(), 2 * 8);            // ln_f weight and bias
}

TEST(ModelLayout, LlamaNamesShapesAndGroups) {
  const ModelDesc cfg = llama_desc(2, 4, 2, 16, 11, 6, 24);
  const ModelLayout layout = model_layout(cfg);
  EXPECT_EQ(layout.tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(layout.pos_emb, -1);
  EXPECT_EQ(layout.find("model.layers.1.self_attn.q_proj.weight").shape, (Shape{16, 16}));
  EXPECT_EQ(layout.find("model.layers.1.self_attn.k_proj.weight").shape, (Shape{8, 16}));  // 2 kv heads of 4
  EXPECT_EQ(layout.find("model.layers.1.mlp.gate_proj.weight").shape, (Shape{24, 16}));
  EXPECT_EQ(layout.find("model.layers.1.mlp.down_proj.weight").shape, (Shape{16, 24}));
  // q, k and v (and gate, up) lie back to back: one fused GEMM each.
  const BlockOffsets& b = layout.blocks[1];
  EXPECT_EQ(layout.find("model.layers.1.self_attn.q_proj.weight").offset, b.qkv_w);
  EXPECT_EQ(layout.find("model.layers.1.self_attn.v_proj.weight").offset, b.qkv_w + (16 + 8) * 16);
  EXPECT_EQ(layout.find("model.layers.1.mlp.up_proj.weight").offset, b.up_w + 24 * 16);
  EXPECT_EQ(b.norm1_b, -1);
  EXPECT_EQ(b.out_b, -1);
  EXPECT_EQ(layout.tensors.back().name, "lm_head.weight");
  EXPECT_EQ(layout.find("lm_head.weight").group, layout.final_group());
  EXPECT_TRUE(layout.reused_groups.empty());
  EXPECT_THROW(layout.find("h.0.ln_1.weight"), Error);
}

// Central differences of the mean loss w.r.t. sampled elements of EVERY parameter tensor, for every
// structural variant. A wrong sign, a missing term or a transposed index gives O(1) relative error;
// fp32 noise gives < 1e-3.
TEST(Model, WholeModelGradientMatchesFiniteDifferences) {
  const int B = 2, T = 5;
  for (const ModelDesc& cfg : small_descs()) {
    SCOPED_TRACE(cfg.str());
    Model model(cfg, options(B, T));
    init(model, 42);
    const Batch batch = random_batch(B, T, cfg.vocab_size, 7);
    model.zero_grad();
    loss_of(model, batch, B, T);
    model.backward();
    const std::vector<float> analytic(model.grads().data<float>(), model.grads().data<float>() + model.grads().numel());
    float* w = model.params().data<float>();
    const float eps = 4e-3f;
    Rng pick(3);
    for (const auto& p : model.layout().tensors) {
      int64_t n = shape_numel(p.shape);
      if (p.offset == model.layout().tok_emb || p.offset == model.layout().lm_head)
        n = int64_t(cfg.vocab_size) * cfg.n_embd;                           // padding rows have no gradient
      if (p.offset == model.layout().pos_emb) n = int64_t(T) * cfg.n_embd;  // positions >= T are unused
      double err2 = 0.0, ref2 = 0.0;
      for (int k = 0; k < 10; ++k) {
        const int64_t i = p.offset + int64_t(pick.next_u64() % uint64_t(n));
        const float saved = w[i];
        w[i] = saved + eps;
        const double up = loss_of(model, batch, B, T);
        w[i] = saved - eps;
        const double down = loss_of(model, batch, B, T);
        w[i] = saved;
        const double numeric = (up - down) / (2.0 * eps);
        err2 += (analytic[size_t(i)] - numeric) * (analytic[size_t(i)] - numeric);
        ref2 += numeric * numeric;
        EXPECT_NEAR(analytic[size_t(i)], numeric, 3e-2 * std::fabs(numeric) + 3e-4)
            << p.name << " element " << i - p.offset;
      }
      if (ref2 > 1e-12) EXPECT_LT(std::sqrt(err2 / ref2), 1e-2) << p.name;
    }
  }
}

TEST(Model, PaddedVocabularyRowsGetNoGradient) {
  const int B = 2, T = 4;
  for (const ModelDesc& cfg : {gpt2_desc(1, 2, 8, 11, 4), llama_desc(1, 2, 1, 8, 11, 4, 8)}) {
    Model model(cfg, options(B, T));
    init(model, 1, 0.02f);
    const Batch batch = random_batch(B, T, cfg.vocab_size, 2);
    model.zero_grad();
    loss_of(model, batch, B, T);
    model.backward();
    const float* g = model.grads().data<float>();
    for (int64_t table : {model.layout().tok_emb, model.layout().lm_head})
      for (int64_t i = int64_t(cfg.vocab_size) * cfg.n_embd; i < int64_t(cfg.padded_vocab_size) * cfg.n_embd; ++i)
        ASSERT_EQ(g[table + i], 0.0f) << cfg.str();
  }
}

TEST(Model, GradReadyCallbackCoversBufferInDecreasingOrder) {
  const int B = 1, T = 3;
  for (const ModelDesc& cfg : {gpt2_desc(3, 2, 8, 11, 4), llama_desc(3, 2, 1, 8, 11, 4, 8)}) {
    Model model(cfg, options(B, T));
    init(model, 1, 0.02f);
    std::vector<std::pair<int64_t, int64_t>> ranges;
    model.set_grad_ready_callback([&](int64_t b, int64_t e) { ranges.push_back({b, e}); });
    const Batch batch = random_batch(B, T, cfg.vocab_size, 2);
    loss_of(model, batch, B, T);
    model.backward();
    ASSERT_EQ(ranges.size(), size_t(cfg.n_layer + 2));
    EXPECT_EQ(ranges.front().second, model.num_params());
    EXPECT_EQ(ranges.back().first, 0);
    for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].second, ranges[i - 1].first);
  }
}

TEST(Model, SmallerBatchInLargerAllocationGivesIdenticalLoss) {
  for (const ModelDesc& cfg : {gpt2_desc(2, 2, 16, 11, 8), llama_desc(2, 4, 2, 16, 11, 8, 24)}) {
    Model exact(cfg, options(2, 5)), larger(cfg, options(4, 8));
    init(exact, 9, 0.02f);
    init(larger, 9, 0.02f);
    const Batch batch = random_batch(2, 5, cfg.vocab_size, 4);
    EXPECT_EQ(loss_of(exact, batch, 2, 5), loss_of(larger, batch, 2, 5)) << cfg.str();
  }
}

TEST(Model, InitialLossIsNearLogVocab) {
  for (const ModelDesc& cfg : {gpt2_desc(2, 2, 16, 50, 8), llama_desc(2, 2, 1, 16, 50, 8, 32)}) {
    Model model(cfg, options(2, 8));
    init(model, 5, 0.02f);
    const Batch batch = random_batch(2, 8, cfg.vocab_size, 6);
    EXPECT_NEAR(loss_of(model, batch, 2, 8), std::log(50.0), 0.05) << cfg.str();
  }
}

TEST(Model, OutOfVocabularyTokenIsADataError) {
  Model model(gpt2_desc(1, 2, 8, 11, 4), options(1, 4));
  std::vector<int32_t> inputs = {1, 2, 11, 3}, targets = {1, 2, 3, 4};
  try {
    model.forward(inputs.data(), targets.data(), 1, 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(std::string(e.what()).find("token id 11"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Model(gpt2_desc(1, 2, 8, 11, 4), options(1, 5)), Error);  // longer than max_seq_len
}

// The recompute seam: re-running every block's forward from its stored input rewrites its
// activations with the same values, so the backward that follows gives bit-identical gradients.
TEST(Model, ReRunningBlocksFromTheirInputGivesBitIdenticalGradients) {
  const int B = 2, T = 5;
  for (const ModelDesc& cfg : small_descs()) {
    Model once(cfg, options(B, T)), rerun(cfg, options(B, T));
    init(once, 11);
    init(rerun, 11);
    const Batch batch = random_batch(B, T, cfg.vocab_size, 3);
    loss_of(once, batch, B, T);
    once.backward();
    loss_of(rerun, batch, B, T);
    for (int l = cfg.n_layer - 1; l >= 0; --l) rerun.forward_block(l);
    rerun.backward();
    const float* a = once.grads().data<float>();
    const float* b = rerun.grads().data<float>();
    for (int64_t i = 0; i < once.num_params(); ++i) ASSERT_EQ(a[i], b[i]) << cfg.str() << " element " << i;
  }
}

// Activation recompute: every mode, for all blocks or only the first, on every structural variant,
// gives gradients bit-identical to keeping everything (deterministic CPU kernels), with fewer bytes
// of activations (N recomputing blocks save N-1 blocks' worth); two backward passes in a row (accumulation) stay
// identical too.
TEST(Model, RecomputeGivesBitIdenticalGradientsWithLessActivationMemory) {
  const int B = 2, T = 5;
  for (const ModelDesc& cfg : small_descs()) {
    Model keep(cfg, options(B, T));
    init(keep, 11);
    const Batch batch = random_batch(B, T, cfg.vocab_size, 3), second = random_batch(B, T, cfg.vocab_size, 4);
    const float loss = loss_of(keep, batch, B, T);
    keep.backward();
    loss_of(keep, second, B, T);
    keep.backward();
    for (RecomputeMode mode : {RecomputeMode::kSelective, RecomputeMode::kFull})
      for (int blocks : {0, 1}) {
        ModelOptions o = options(B, T);
        o.recompute = {mode, blocks};
        Model rc(cfg, o);
        init(rc, 11);
        const std::string what = cfg.str() + " " + describe(o.recompute, cfg.n_layer);
        EXPECT_EQ(loss_of(rc, batch, B, T), loss) << what;
        rc.backward();
        loss_of(rc, second, B, T);
        rc.backward();
        const float* a = keep.grads().data<float>();
        const float* b = rc.grads().data<float>();
        for (int64_t i = 0; i < keep.num_params(); ++i) ASSERT_EQ(a[i], b[i]) << what << " element " << i;
        // N recomputing blocks share one scratch row: they save N-1 blocks' worth.
        const int n = blocks == 0 ? cfg.n_layer : blocks;
        if (n >= 2)
          EXPECT_LT(rc.activation_plan().total_bytes(), keep.activation_plan().total_bytes()) << what;
        else
          EXPECT_EQ(rc.activation_plan().total_bytes(), keep.activation_plan().total_bytes()) << what;
      }
  }
}

// Full recompute keeps only the residual stream per block: with L blocks its activations are the
// kept ones' minus L-1 blocks' worth of everything else; selective drops exactly the norm outputs,
// the MLP activation and (on the CPU) the attention probabilities of each recomputing block but one.
TEST(Model, RecomputePlanKeepsWhatEachModeSays) {
  const ModelDesc d = llama_desc(4, 4, 2, 16, 11, 8, 24);
  const int B = 2, T = 8;
  const ActivationPlan none(d, Device::cpu(), DType::kF32, B, T, {});
  const ActivationPlan full(d, Device::cpu(), DType::kF32, B, T, {RecomputeMode::kFull, 0});
  const ActivationPlan sel(d, Device::cpu(), DType::kF32, B, T, {RecomputeMode::kSelective, 0});
  const ActivationPlan sel2(d, Device::cpu(), DType::kF32, B, T, {RecomputeMode::kSelective, 2});
  int64_t per_block = 0, selective_block = 0;
  for (int a = int(Act::kNorm1); a <= int(Act::kMlpAct); ++a) {
    per_block += none.buffer(Act(a)).bytes() / d.n_layer;
    if (Act(a) == Act::kNorm1 || Act(a) == Act::kNorm2 || Act(a) == Act::kMlpAct || Act(a) == Act::kAttStats)
      selective_block += none.buffer(Act(a)).bytes() / d.n_layer;
  }
  EXPECT_EQ(none.total_bytes() - full.total_bytes(), (d.n_layer - 1) * per_block);
  EXPECT_EQ(none.total_bytes() - sel.total_bytes(), (d.n_layer - 1) * selective_block);
  EXPECT_EQ(none.total_bytes() - sel2.total_bytes(), 1 * selective_block);
  EXPECT_TRUE(sel2.recomputed(1, Act::kNorm1));
  EXPECT_FALSE(sel2.recomputed(2, Act::kNorm1));
  EXPECT_FALSE(sel2.recomputed(0, Act::kQkv));
  EXPECT_EQ(sel2.row(0, Act::kNorm1), sel2.row(1, Act::kNorm1));  // the shared scratch row
  EXPECT_EQ(sel2.row(3, Act::kNorm1), 1);
  EXPECT_EQ(describe(Recompute{RecomputeMode::kSelective, 2}, d.n_layer), "selective (2 of 4 blocks)");
  EXPECT_THROW(parse_recompute("some"), Error);
}

TEST(InitWeights, AnyRangeEqualsThatRangeOfTheWholeBuffer) {
  for (const ModelDesc& cfg : {gpt2_desc(2, 2, 16, 50, 8), llama_desc(2, 4, 2, 16, 50, 8, 24)}) {
    const ModelLayout layout = model_layout(cfg);
    std::vector<float> whole(size_t(layout.numel));
    init_weights(cfg, layout, 77, 0, layout.numel, whole.data());
    for (auto [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {5, 1000}, {1000, layout.numel}}) {
      std::vector<float> part(size_t(end - begin));
      init_weights(cfg, layout, 77, begin, end, part.data());
      for (int64_t i = begin; i < end; ++i) ASSERT_EQ(part[size_t(i - begin)], whole[size_t(i)]) << i;
    }
    // Norm weights 1, padded rows 0, matrices N(0, init_std) with the residual projections scaled.
    EXPECT_EQ(whole[size_t(layout.blocks[0].norm1_w)], 1.0f);
    EXPECT_EQ(whole[size_t(layout.tok_emb + int64_t(cfg.vocab_size) * cfg.n_embd)], 0.0f);
    auto rms = [&](int64_t begin, int64_t n) {
      double s = 0;
      for (int64_t i = begin; i < begin + n; ++i) s += double(whole[size_t(i)]) * whole[size_t(i)];
      return std::sqrt(s / double(n));
    };
    EXPECT_NEAR(rms(layout.tok_emb, int64_t(cfg.vocab_size) * cfg.n_embd), cfg.init_std, 0.1 * cfg.init_std);
    EXPECT_NEAR(rms(layout.blocks[0].down_w, int64_t(cfg.n_embd) * cfg.mlp_hidden),
                cfg.init_std / std::sqrt(2.0 * cfg.n_layer), 0.1 * cfg.init_std);
    std::vector<float> other(size_t(layout.numel));
    init_weights(cfg, layout, 78, 0, layout.numel, other.data());
    EXPECT_NE(other[size_t(layout.tok_emb)], whole[size_t(layout.tok_emb)]);  // the seed matters
  }
}

}  // namespace
}  // namespace tt

namespace tt {
namespace {

// A ParamSource that copies each acquired group into a group-sized buffer of its own and turns the
// previous group's buffer into NaNs (kept allocated), so a pointer into the wrong group or a read
// past the next acquire shows up; it records the (group, next_group) calls.
class CopyingSource : public ParamSource {
 public:
  CopyingSource(const std::vector<float>& full, std::vector<ParamGroup> groups) : full_(full), groups_(groups) {}
  const void* acquire(int group, int next_group) override {
    calls.push_back({group, next_group});
    previous_ = std::move(window_);
    std::fill(previous_.begin(), previous_.end(), std::nanf(""));
    const ParamGroup& g = groups_[size_t(group)];
    window_.assign(full_.begin() + g.begin, full_.begin() + g.end);
    return window_.data();
  }
  std::vector<std::pair<int, int>> calls;

 private:
  const std::vector<float>& full_;
  std::vector<ParamGroup> groups_;
  std::vector<float> window_, previous_;
};

// Writing gradients group by group into a GradSink (ZeRO-3's path) gives the model's own gradients,
// bit for bit. Each group gets a region of its own with a guard band after it, so a write at a flat
// offset instead of a group-relative one lands in a guard or another group.
class GuardedSink : public GradSink {
 public:
  static constexpr int64_t kGuard = 64;
  static constexpr float kUntouched = 1e30f;
  explicit GuardedSink(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
    int64_t at = 0;
    for (const ParamGroup& g : groups_) {
      at_.push_back(at);
      at += g.size() + kGuard;
    }
    buffer.assign(size_t(at), kUntouched);
    for (size_t g = 0; g < groups_.size(); ++g) std::fill_n(buffer.begin() + at_[g], groups_[g].size(), 0.0f);
  }
  void* grads(int group) override {
    asked.push_back(group);
    return buffer.data() + at_[size_t(group)];
  }
  float at(int g, int64_t i) const { return buffer[size_t(at_[size_t(g)] + i)]; }
  bool guards_untouched() const {
    for (size_t g = 0; g < groups_.size(); ++g)
      for (int64_t i = 0; i < kGuard; ++i)
        if (buffer[size_t(at_[g] + groups_[g].size() + i)] != kUntouched) return false;
    return true;
  }
  std::vector<float> buffer;
  std::vector<int> asked;

 private:
  std::vector<ParamGroup> groups_;
  std::vector<int64_t> at_;
};

TEST(Model, GradSinkGetsBitIdenticalGradientsGroupByGroup) {
  const int B = 2, T = 4;
  for (const ModelDesc& cfg : {gpt2_desc(3, 2, 8, 11, 4), llama_desc(3, 2, 1, 8, 11, 4, 8)}) {
    SCOPED_TRACE(cfg.str());
    const auto& groups = model_layout(cfg).groups;
    Model own(cfg, options(B, T));
    init(own, 3, 0.05f);
    Model sunk(cfg, options(B, T, /*hold_params=*/true, /*hold_grads=*/false));
    EXPECT_FALSE(sunk.grads().defined());
    std::copy_n(own.params().data<float>(), own.params().numel(), sunk.params().data<float>());
    GuardedSink sink(groups);
    sunk.set_grad_sink(&sink);
    sunk.zero_grad();  // nothing to clear: no buffer of its own
    const Batch batch = random_batch(B, T, cfg.vocab_size, 5);
    for (int micro = 0; micro < 2; ++micro) {
      loss_of(own, batch, B, T);
      loss_of(sunk, batch, B, T);
      own.backward(0.5f);
      sunk.backward(0.5f);
    }
    const float* a = own.grads().data<float>();
    for (int g = 0; g < int(groups.size()); ++g)
      for (int64_t i = 0; i < groups[size_t(g)].size(); ++i)
        ASSERT_EQ(a[groups[size_t(g)].begin + i], sink.at(g, i)) << "group " << g << " element " << i;
    EXPECT_TRUE(sink.guards_untouched());
    // Backward's order: the head's group (tied: the embeddings), the final group, blocks L-1 … 0,
    // the embeddings. L = 3: group L + 1 = 4 is the final one.
    const std::vector<int> one =
        cfg.tied_head ? std::vector<int>{0, 4, 3, 2, 1, 0} : std::vector<int>{4, 4, 3, 2, 1, 0};
    std::vector<int> want = one;
    want.insert(want.end(), one.begin(), one.end());
    EXPECT_EQ(sink.asked, want);
  }
}

// Reading parameters group by group through a ParamSource (ZeRO-3's path) gives the same loss and
// gradients, bit for bit, as the model's own buffer, in the documented acquire order.
TEST(Model, ParamSourceGivesBitIdenticalLossAndGradientsInTheDocumentedOrder) {
  const int B = 2, T = 4;
  for (const ModelDesc& cfg : {gpt2_desc(3, 2, 8, 11, 4), llama_desc(3, 2, 1, 8, 11, 4, 8)}) {
    SCOPED_TRACE(cfg.str());
    Model own(cfg, options(B, T));
    init(own, 3, 0.05f);
    const std::vector<float> full(own.params().data<float>(), own.params().data<float>() + own.params().numel());
    Model sourced(cfg, options(B, T, /*hold_params=*/false));
    EXPECT_FALSE(sourced.params().defined());
    CopyingSource source(full, model_layout(cfg).groups);
    sourced.set_param_source(&source);

    const Batch batch = random_batch(B, T, cfg.vocab_size, 7);
    for (int micro = 0; micro < 2; ++micro) {  // gradients accumulate across two backward passes
      EXPECT_EQ(loss_of(own, batch, B, T), loss_of(sourced, batch, B, T));
      own.backward(0.5f);
      sourced.backward(0.5f);
    }
    const float* a = own.grads().data<float>();
    const float* b = sourced.grads().data<float>();
    for (int64_t i = 0; i < own.grads().numel(); ++i) ASSERT_EQ(a[i], b[i]) << "gradient element " << i;

    const int L = cfg.n_layer;
    std::vector<std::pair<int, int>> step = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};  // forward: embeddings, blocks
    if (cfg.tied_head) {
      for (auto c : std::vector<std::pair<int, int>>{{4, 0}, {0, L + 1}, {0, L + 1}, {L + 1, L}}) step.push_back(c);
    } else {  // the head lives in the final group: one acquire at the end of forward, one to start backward
      for (auto c : std::vector<std::pair<int, int>>{{4, -1}, {L + 1, L}}) step.push_back(c);
    }
    for (auto c : std::vector<std::pair<int, int>>{{3, 2}, {2, 1}, {1, -1}}) step.push_back(c);  // backward
    std::vector<std::pair<int, int>> want = step;
    want.insert(want.end(), step.begin(), step.end());
    EXPECT_EQ(source.calls, want);

    // Full recompute re-runs each block with the parameters its backward acquires: the same acquires
    // (ZeRO-3 gathers a block once for its recompute and backward), the same gradients.
    ModelOptions ro = options(B, T, /*hold_params=*/false);
    ro.recompute = {RecomputeMode::kFull, 0};
    Model recomputing(cfg, ro);
    CopyingSource rsource(full, model_layout(cfg).groups);
    recomputing.set_param_source(&rsource);
    for (int micro = 0; micro < 2; ++micro) {
      loss_of(recomputing, batch, B, T);
      recomputing.backward(0.5f);
    }
    EXPECT_EQ(rsource.calls, want);
    const float* c = recomputing.grads().data<float>();
    for (int64_t i = 0; i < own.grads().numel(); ++i) ASSERT_EQ(a[i], c[i]) << "recompute gradient element " << i;

    // Without targets (sampling) the last acquire announces nothing after it.
    source.calls.clear();
    sourced.forward(batch.inputs.data(), nullptr, B, T);
    EXPECT_EQ(source.calls.back().second, -1);
  }
}

}  // namespace
}  // namespace tt
