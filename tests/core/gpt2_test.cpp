// GPT-2 model tests: whole-model finite-difference gradient check over every parameter tensor,
// the grad-ready callback contract, and forward consistency across allocation sizes.
#include "core/gpt2.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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

TEST(Gpt2, LayoutCoversBufferAndNamesFollowHuggingFace) {
  const GPT2Config cfg = GPT2Config::make(2, 2, 8, 11, 6);
  EXPECT_EQ(cfg.padded_vocab_size, 128);
  const auto layout = gpt2_param_layout(cfg);
  int64_t expected = 0;
  for (const auto& p : layout) {
    EXPECT_EQ(p.offset, expected) << p.name;
    expected += shape_numel(p.shape);
    EXPECT_EQ(p.decay, p.shape.size() == 2) << p.name;
  }
  EXPECT_EQ(expected, gpt2_num_params(cfg));
  EXPECT_EQ(layout.front().name, "wte.weight");
  EXPECT_EQ(layout[2].name, "h.0.ln_1.weight");
  EXPECT_EQ(layout.back().name, "ln_f.bias");
}

TEST(Gpt2, Gpt2SmallHas124MParameters) {
  const GPT2Config cfg = GPT2Config::make(12, 12, 768, 50257, 1024);
  const double real = double(gpt2_num_params(cfg)) - double(cfg.padded_vocab_size - cfg.vocab_size) * 768;
  EXPECT_EQ(int64_t(real), 124439808);  // the published GPT-2 small parameter count
}

// Central differences of the mean loss w.r.t. sampled elements of EVERY parameter tensor. A wrong
// sign, a missing term or a transposed index gives O(1) relative error; fp32 noise gives < 1e-3.
TEST(Gpt2, WholeModelGradientMatchesFiniteDifferences) {
  const int B = 2, T = 5;
  const GPT2Config cfg = GPT2Config::make(2, 2, 8, 11, 6);
  GPT2 model(cfg, B, T);
  model.init_weights(42, 0.3f);
  const Batch batch = random_batch(B, T, cfg.vocab_size, 7);

  model.zero_grad();
  model.forward(batch.inputs.data(), batch.targets.data(), B, T);
  model.backward();
  const std::vector<float> analytic(model.grads().data<float>(), model.grads().data<float>() + model.grads().numel());

  float* w = model.params().data<float>();
  auto loss_at = [&]() { return double(model.forward(batch.inputs.data(), batch.targets.data(), B, T)); };
  const float eps = 4e-3f;
  Rng pick(3);
  for (const auto& p : model.layout()) {
    int64_t n = shape_numel(p.shape);
    if (p.name == "wte.weight") n = int64_t(cfg.vocab_size) * cfg.n_embd;  // padding rows have no gradient
    if (p.name == "wpe.weight") n = int64_t(T) * cfg.n_embd;               // positions >= T are unused
    double err2 = 0.0, ref2 = 0.0;
    for (int k = 0; k < 12; ++k) {
      const int64_t i = p.offset + int64_t(pick.next_u64() % uint64_t(n));
      const float saved = w[i];
      w[i] = saved + eps;
      const double up = loss_at();
      w[i] = saved - eps;
      const double down = loss_at();
      w[i] = saved;
      const double numeric = (up - down) / (2.0 * eps);
      err2 += (analytic[size_t(i)] - numeric) * (analytic[size_t(i)] - numeric);
      ref2 += numeric * numeric;
      EXPECT_NEAR(analytic[size_t(i)], numeric, 3e-2 * std::fabs(numeric) + 2e-4)
          << p.name << " element " << i - p.offset;
    }
    if (ref2 > 1e-12) EXPECT_LT(std::sqrt(err2 / ref2), 1e-2) << p.name;
  }
}

TEST(Gpt2, PaddedVocabularyRowsGetNoGradient) {
  const int B = 2, T = 4;
  const GPT2Config cfg = GPT2Config::make(1, 2, 8, 11, 4);
  GPT2 model(cfg, B, T);
  model.init_weights(1, 0.02f);
  const Batch batch = random_batch(B, T, cfg.vocab_size, 2);
  model.zero_grad();
  model.forward(batch.inputs.data(), batch.targets.data(), B, T);
  model.backward();
  const float* g = model.grads().data<float>();
  for (int64_t i = int64_t(cfg.vocab_size) * cfg.n_embd; i < int64_t(cfg.padded_vocab_size) * cfg.n_embd; ++i)
    ASSERT_EQ(g[i], 0.0f);
}

TEST(Gpt2, GradReadyCallbackCoversBufferInDecreasingOrder) {
  const int B = 1, T = 3;
  const GPT2Config cfg = GPT2Config::make(3, 2, 8, 11, 4);
  GPT2 model(cfg, B, T);
  model.init_weights(1, 0.02f);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  model.set_grad_ready_callback([&](int64_t b, int64_t e) { ranges.push_back({b, e}); });
  const Batch batch = random_batch(B, T, cfg.vocab_size, 2);
  model.forward(batch.inputs.data(), batch.targets.data(), B, T);
  model.backward();
  ASSERT_EQ(ranges.size(), size_t(cfg.n_layer + 2));
  EXPECT_EQ(ranges.front().second, gpt2_num_params(cfg));
  EXPECT_EQ(ranges.back().first, 0);
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].second, ranges[i - 1].first);
}

TEST(Gpt2, SmallerBatchInLargerAllocationGivesIdenticalLoss) {
  const GPT2Config cfg = GPT2Config::make(2, 2, 16, 11, 8);
  GPT2 exact(cfg, 2, 5), larger(cfg, 4, 8);
  exact.init_weights(9, 0.02f);
  larger.init_weights(9, 0.02f);
  const Batch batch = random_batch(2, 5, cfg.vocab_size, 4);
  EXPECT_EQ(exact.forward(batch.inputs.data(), batch.targets.data(), 2, 5),
            larger.forward(batch.inputs.data(), batch.targets.data(), 2, 5));
}

TEST(Gpt2, InitialLossIsNearLogVocab) {
  const GPT2Config cfg = GPT2Config::make(2, 2, 16, 50, 8);
  GPT2 model(cfg, 2, 8);
  model.init_weights(5, 0.02f);
  const Batch batch = random_batch(2, 8, cfg.vocab_size, 6);
  EXPECT_NEAR(model.forward(batch.inputs.data(), batch.targets.data(), 2, 8), std::log(50.0), 0.05);
}

TEST(Gpt2, OutOfVocabularyTokenIsADataError) {
  const GPT2Config cfg = GPT2Config::make(1, 2, 8, 11, 4);
  GPT2 model(cfg, 1, 4);
  std::vector<int32_t> inputs = {1, 2, 11, 3}, targets = {1, 2, 3, 4};
  try {
    model.forward(inputs.data(), targets.data(), 1, 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(std::string(e.what()).find("token id 11"), std::string::npos) << e.what();
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
  const float* acquire(int group, int next_group) override {
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

TEST(Gpt2, ParamGroupsAreEmbeddingsBlocksAndFinalLayerNormInBufferOrder) {
  const GPT2Config cfg = GPT2Config::make(3, 2, 8, 11, 4);
  const auto groups = gpt2_param_groups(cfg);
  const auto layout = gpt2_param_layout(cfg);
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_EQ(groups[0].begin, 0);
  EXPECT_EQ(groups[0].end, layout[2].offset);  // wte + wpe
  for (size_t i = 1; i < groups.size(); ++i) EXPECT_EQ(groups[i].begin, groups[i - 1].end);
  EXPECT_EQ(groups[1].size(), 12 * 8 * 8 + 13 * 8);  // one block: 12C² + 13C
  EXPECT_EQ(groups.back().size(), 2 * 8);            // ln_f weight and bias
  EXPECT_EQ(groups.back().end, gpt2_num_params(cfg));
}

// Writing gradients group by group into a GradSink (ZeRO-3's path) gives the model's own gradients,
// bit for bit, and asks for the groups in backward's order: tied embeddings, final LayerNorm, blocks
// L-1 … 0, embeddings again. Each group gets a region of its own with a guard band after it, so a
// write at a flat offset instead of a group-relative one lands in a guard or another group.
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
  float* grads(int group) override {
    asked.push_back(group);
    return buffer.data() + at_[size_t(group)];
  }
  // Group g's element i, and whether every guard band is untouched.
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

TEST(Gpt2, GradSinkGetsBitIdenticalGradientsGroupByGroup) {
  const int B = 2, T = 4;
  const GPT2Config cfg = GPT2Config::make(3, 2, 8, 11, 4);
  const auto groups = gpt2_param_groups(cfg);
  GPT2 own(cfg, B, T);
  own.init_weights(3, 0.05f);
  GPT2 sunk(cfg, B, T, /*hold_params=*/true, /*hold_grads=*/false);
  EXPECT_FALSE(sunk.grads().defined());
  std::copy_n(own.params().data<float>(), own.params().numel(), sunk.params().data<float>());
  GuardedSink sink(groups);
  sunk.set_grad_sink(&sink);
  sunk.zero_grad();  // nothing to clear: no buffer of its own
  const Batch batch = random_batch(B, T, cfg.vocab_size, 5);
  for (int micro = 0; micro < 2; ++micro) {
    own.forward(batch.inputs.data(), batch.targets.data(), B, T);
    sunk.forward(batch.inputs.data(), batch.targets.data(), B, T);
    own.backward(0.5f);
    sunk.backward(0.5f);
  }
  const float* a = own.grads().data<float>();
  for (int g = 0; g < int(groups.size()); ++g)
    for (int64_t i = 0; i < groups[size_t(g)].size(); ++i)
      ASSERT_EQ(a[groups[size_t(g)].begin + i], sink.at(g, i)) << "group " << g << " element " << i;
  EXPECT_TRUE(sink.guards_untouched());
  const std::vector<int> one = {0, 4, 3, 2, 1, 0};  // L = 3: group L + 1 = 4 is the final LayerNorm
  std::vector<int> want = one;
  want.insert(want.end(), one.begin(), one.end());
  EXPECT_EQ(sink.asked, want);
}

// Reading parameters group by group through a ParamSource (ZeRO-3's path) gives the same loss and
// gradients, bit for bit, as the model's own buffer, in the documented acquire order.
TEST(Gpt2, ParamSourceGivesBitIdenticalLossAndGradientsInTheDocumentedOrder) {
  const int B = 2, T = 4;
  const GPT2Config cfg = GPT2Config::make(3, 2, 8, 11, 4);
  GPT2 own(cfg, B, T);
  own.init_weights(3, 0.05f);
  const std::vector<float> full(own.params().data<float>(), own.params().data<float>() + own.params().numel());
  GPT2 sourced(cfg, B, T, /*hold_params=*/false);
  EXPECT_FALSE(sourced.params().defined());
  CopyingSource source(full, gpt2_param_groups(cfg));
  sourced.set_param_source(&source);

  const Batch batch = random_batch(B, T, cfg.vocab_size, 7);
  for (int micro = 0; micro < 2; ++micro) {  // gradients accumulate across two backward passes
    EXPECT_EQ(own.forward(batch.inputs.data(), batch.targets.data(), B, T),
              sourced.forward(batch.inputs.data(), batch.targets.data(), B, T));
    own.backward(0.5f);
    sourced.backward(0.5f);
  }
  const float* a = own.grads().data<float>();
  const float* b = sourced.grads().data<float>();
  for (int64_t i = 0; i < own.grads().numel(); ++i) ASSERT_EQ(a[i], b[i]) << "gradient element " << i;

  const int L = cfg.n_layer;
  std::vector<std::pair<int, int>> step = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}, {0, L + 1}};  // forward
  for (auto c : std::vector<std::pair<int, int>>{{0, L + 1}, {L + 1, L}, {3, 2}, {2, 1}, {1, -1}}) step.push_back(c);
  std::vector<std::pair<int, int>> want = step;
  want.insert(want.end(), step.begin(), step.end());
  EXPECT_EQ(source.calls, want);

  // Without targets (sampling) the LM head announces nothing after it.
  source.calls.clear();
  sourced.forward(batch.inputs.data(), nullptr, B, T);
  EXPECT_EQ(source.calls.back(), std::make_pair(0, -1));
}

}  // namespace
}  // namespace tt
