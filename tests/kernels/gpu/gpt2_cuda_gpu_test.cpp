// GPU tests of the whole model (core/gpt2_cuda) and the GPU side of the trainer
// (launch/cuda_training): gradients of a small GPT-2 against the CPU fp32 model per parameter
// tensor (fp32 mode to ~1e-4, bf16 to a few 1e-2 relative L2 error), the grad-ready ranges, 20
// AdamW steps tracking the CPU loss curve, and a bit-exact restart from get_state/set_state (with
// stochastic rounding). Every test skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/config.h"
#include "core/gpt2.h"
#include "core/gpt2_cuda.h"
#include "core/rng.h"
#include "launch/cuda_training.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "parallel/comm/local/local_communicator.h"
#include "tests/gpu_test_util.h"

namespace tt::test {
namespace {

// 2 layers, head size 32 (a size the flash kernel takes), padded vocabulary 128 > V.
GPT2Config small_config() { return GPT2Config::make(/*n_layer=*/2, /*n_head=*/2, /*n_embd=*/64, /*vocab=*/100, 32); }
constexpr int kB = 2, kT = 24;

std::vector<int32_t> random_tokens(int64_t n, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (auto& t : out) t = int32_t(rng.next_u64() % uint64_t(V));
  return out;
}

// A learnable stream: each sequence counts up from a random start modulo V (the next token is the
// previous one plus 1), so 20 steps lower the loss by about a quarter (4.64 -> 3.37 on the CPU).
void learnable_batch(std::vector<int32_t>& in, std::vector<int32_t>& tg, int B, int T, int V, Rng& rng) {
  for (int b = 0; b < B; ++b) {
    const int start = int(rng.next_u64() % uint64_t(V));
    for (int t = 0; t <= T; ++t) {
      const int32_t tok = int32_t((start + t) % V);
      if (t < T) in[size_t(b * T + t)] = tok;
      if (t > 0) tg[size_t(b * T + t - 1)] = tok;
    }
  }
}

double l2(const float* a, const float* b, int64_t n) {  // ||a - b|| (b may be null: ||a||)
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - (b ? double(b[i]) : 0.0);
    s += d * d;
  }
  return std::sqrt(s);
}

void check_grads(Precision precision, double rtol, double atol) {
  const GPT2Config cfg = small_config();
  GPT2 cpu(cfg, kB, kT);
  cpu.init_weights(7, 0.02f);
  if (precision == Precision::kBF16)  // the same (bf16) weights on both sides: only activations differ
    for (int64_t i = 0; i < cpu.params().numel(); ++i)
      cpu.params().data<float>()[i] = bf16_to_f32(f32_to_bf16(cpu.params().data<float>()[i]));
  const auto inputs = random_tokens(kB * kT, cfg.vocab_size, 1), targets = random_tokens(kB * kT, cfg.vocab_size, 2);
  const float cpu_loss = cpu.forward(inputs.data(), targets.data(), kB, kT);
  cpu.zero_grad();
  cpu.backward(0.5f);

  GPT2Cuda gpu(cfg, kB, kT, precision, 0);
  gpu.set_params(cpu.params().data<float>());
  std::vector<std::pair<int64_t, int64_t>> ranges;
  gpu.set_grad_ready_callback([&](int64_t b, int64_t e) { ranges.push_back({b, e}); });
  gpu.forward(inputs.data(), targets.data(), kB, kT);
  const float gpu_loss = gpu.take_loss_sum();
  gpu.zero_grad();
  gpu.backward(0.5f);
  const std::vector<float> g = gpu.grads_to_host();
  const std::string what = precision_name(precision);

  EXPECT_NEAR(gpu_loss, cpu_loss, (precision == Precision::kBF16 ? 1e-2 : 1e-5) * cpu_loss) << what << " loss";
  const float* ref = cpu.grads().data<float>();
  for (const ParamInfo& p : cpu.layout()) {
    const int64_t n = shape_numel(p.shape);
    const double err = l2(g.data() + p.offset, ref + p.offset, n), norm = l2(ref + p.offset, nullptr, n);
    EXPECT_LE(err, rtol * norm + atol * std::sqrt(double(n)))
        << what << " " << p.name << ": |gpu - cpu| " << err << " vs |cpu| " << norm << " (relative " << err / norm
        << ")";
  }
  // wte's vocabulary padding rows get no gradient.
  for (int64_t i = int64_t(cfg.vocab_size) * cfg.n_embd; i < int64_t(cfg.padded_vocab_size) * cfg.n_embd; ++i)
    ASSERT_EQ(g[size_t(i)], 0.0f) << what << " padding row gradient at " << i;
  // The grad-ready ranges: decreasing, contiguous, covering the buffer.
  ASSERT_FALSE(ranges.empty());
  EXPECT_EQ(ranges.front().second, gpu.num_params());
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].second, ranges[i - 1].first) << "range " << i;
  EXPECT_EQ(ranges.back().first, 0);
}

TEST(GPT2CudaGpu, Fp32GradsMatchCpu) {
  TT_REQUIRE_GPU();
  check_grads(Precision::kFP32, 1e-4, 1e-7);
}

TEST(GPT2CudaGpu, Bf16GradsMatchCpu) {
  TT_REQUIRE_GPU();
  check_grads(Precision::kBF16, 5e-2, 1e-5);
}

TEST(GPT2CudaGpu, ParamsRoundTripAndTokensAreChecked) {
  TT_REQUIRE_GPU();
  const GPT2Config cfg = small_config();
  GPT2 cpu(cfg, 1, 1);
  cpu.init_weights(3, 0.02f);
  GPT2Cuda gpu(cfg, kB, kT, Precision::kFP32, 0);
  gpu.set_params(cpu.params().data<float>());
  std::vector<float> back(size_t(gpu.num_params()));
  gpu.get_params(back.data());
  EXPECT_EQ(0, std::memcmp(back.data(), cpu.params().data<float>(), back.size() * sizeof(float)));
  auto bad = random_tokens(kB * kT, cfg.vocab_size, 1);
  bad[5] = cfg.vocab_size;
  try {
    gpu.forward(bad.data(), nullptr, kB, kT);
    FAIL() << "an out-of-vocabulary token must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(std::string(e.what()).find("position 5"), std::string::npos) << e.what();
  }
}

// ---- the trainer's GPU side ----------------------------------------------------------------------

config::Config train_config(const GPT2Config& mc) {
  config::Config cfg;
  auto* m = cfg.mutable_model();
  m->set_n_layer(mc.n_layer);
  m->set_n_head(mc.n_head);
  m->set_n_embd(mc.n_embd);
  m->set_vocab_size(mc.vocab_size);
  m->set_max_seq_len(mc.max_seq_len);
  auto* t = cfg.mutable_train();
  t->set_batch_size(kB);
  t->set_seq_len(kT);
  t->set_steps(20);
  t->set_seed(11);
  auto* o = cfg.mutable_optimizer();
  o->set_lr(3e-3f);
  o->set_weight_decay(0.1f);
  fill_defaults(cfg);
  return cfg;
}

struct CpuRun {  // the CPU trainer's step, spelled out: forward, backward, clip, AdamW
  GPT2 model;
  AdamW opt;
  CpuRun(const GPT2Config& mc, const config::Config& cfg)
      : model(mc, kB, kT), opt(ranges(model), model.params().numel(), settings(cfg)) {
    model.init_weights(cfg.train().seed(), 0.02f);
  }
  static std::vector<ParamRange> ranges(const GPT2& m) {
    std::vector<ParamRange> r;
    for (const auto& p : m.layout()) r.push_back({p.offset, shape_numel(p.shape), p.decay});
    return r;
  }
  static AdamWSettings settings(const config::Config& c) {
    const auto& o = c.optimizer();
    return {o.beta1(), o.beta2(), o.eps(), o.weight_decay()};
  }
  float step(const std::vector<int32_t>& in, const std::vector<int32_t>& tg, float lr, float clip) {
    model.zero_grad();
    const float loss = model.forward(in.data(), tg.data(), kB, kT);
    model.backward();
    const double norm = global_grad_norm(model.grads().data<float>(), model.grads().numel());
    opt.step(model.params().data<float>(), model.grads().data<float>(), lr, clip_scale(norm, clip));
    return loss;
  }
};

std::unique_ptr<CudaTraining> make_gpu_run(const config::Config& cfg, const GPT2Config& mc, Precision precision,
                                           bool stochastic, parallel::Communicator& comm, const float* init) {
  TrainDevice dev;
  dev.device = Device::cuda(0);
  dev.precision = precision;
  dev.stochastic_rounding = stochastic;
  return create_cuda_training(cfg, mc, dev, comm, init);
}

void check_loss_curve(Precision precision, double rtol) {
  const GPT2Config mc = small_config();
  const config::Config cfg = train_config(mc);
  CpuRun cpu(mc, cfg);
  parallel::LocalCommunicator comm;
  auto gpu = make_gpu_run(cfg, mc, precision, false, comm, cpu.model.params().data<float>());
  std::vector<int32_t> in(size_t(kB * kT)), tg(in.size());
  Rng data(5);
  const float lr = cfg.optimizer().lr();
  float first = 0.0f, last = 0.0f;
  for (int step = 0; step < 20; ++step) {
    learnable_batch(in, tg, kB, kT, mc.vocab_size, data);
    const float cpu_loss = cpu.step(in, tg, lr, cfg.optimizer().grad_clip());
    const StepStats s = gpu->step(
        step, lr, [] { return 0.0; }, in.data(), tg.data());
    EXPECT_NEAR(s.loss, cpu_loss, rtol * cpu_loss) << precision_name(precision) << " step " << step;
    EXPECT_TRUE(std::isfinite(s.grad_norm) && s.grad_norm > 0) << "step " << step;
    EXPECT_GT(s.forward_s, 0.0);
    EXPECT_GT(s.backward_s, 0.0);
    if (step == 0) first = s.loss;
    last = s.loss;
  }
  EXPECT_LT(last, 0.8f * first) << "20 steps on a learnable stream must lower the loss";
  EXPECT_EQ(gpu->optimizer_steps(), 20);
}

TEST(CudaTrainingGpu, Fp32TracksCpuLossCurve) {
  TT_REQUIRE_GPU();
  check_loss_curve(Precision::kFP32, 1e-3);
}

TEST(CudaTrainingGpu, Bf16TracksCpuLossCurve) {
  TT_REQUIRE_GPU();
  check_loss_curve(Precision::kBF16, 0.04);
}

// State saved after 3 steps and loaded into a fresh instance continues bit for bit: the checkpoint
// path, including the bf16 working copy re-derived with the stochastic rounding of step 3.
TEST(CudaTrainingGpu, RestartFromStateIsBitExact) {
  TT_REQUIRE_GPU();
  const GPT2Config mc = small_config();
  const config::Config cfg = train_config(mc);
  GPT2 init(mc, 1, 1);
  init.init_weights(cfg.train().seed(), 0.02f);
  parallel::LocalCommunicator comm;
  for (bool stochastic : {false, true}) {
    auto a = make_gpu_run(cfg, mc, Precision::kBF16, stochastic, comm, init.params().data<float>());
    std::vector<int32_t> in(size_t(kB * kT)), tg(in.size());
    Rng data(9);
    for (int step = 0; step < 3; ++step) {
      learnable_batch(in, tg, kB, kT, mc.vocab_size, data);
      a->step(
          step, 1e-3f, [] { return 0.0; }, in.data(), tg.data());
    }
    const int64_t n = gpt2_num_params(mc);
    std::vector<float> p(static_cast<size_t>(n)), m(p.size()), v(p.size());
    a->get_state(p.data(), m.data(), v.data());
    auto b = make_gpu_run(cfg, mc, Precision::kBF16, stochastic, comm, init.params().data<float>());
    b->set_state(p.data(), m.data(), v.data(), a->optimizer_steps());
    const Rng::State at = data.state();  // both runs see the same next batches
    std::vector<float> la, lb;
    Rng da(0), db(0);
    da.set_state(at);
    db.set_state(at);
    for (int step = 3; step < 6; ++step) {
      learnable_batch(in, tg, kB, kT, mc.vocab_size, da);
      la.push_back(a->step(
                        step, 1e-3f, [] { return 0.0; }, in.data(), tg.data())
                       .loss);
      learnable_batch(in, tg, kB, kT, mc.vocab_size, db);
      lb.push_back(b->step(
                        step, 1e-3f, [] { return 0.0; }, in.data(), tg.data())
                       .loss);
    }
    for (size_t i = 0; i < la.size(); ++i)
      EXPECT_EQ(la[i], lb[i]) << (stochastic ? "stochastic" : "nearest") << " rounding, step " << i + 4;
    std::vector<float> pa(static_cast<size_t>(n)), pb(pa.size());
    a->get_state(pa.data(), nullptr, nullptr);
    b->get_state(pb.data(), nullptr, nullptr);
    EXPECT_EQ(0, std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float))) << "master weights differ";
  }
}

}  // namespace
}  // namespace tt::test
