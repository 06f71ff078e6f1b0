// The model and the one training loop on a CUDA device against the CPU reference: gradients of small
// GPT-2 and Llama (GQA, RoPE, SwiGLU) models per parameter tensor (fp32 to ~1e-4, bf16 to a few 1e-2
// relative L2 error), the grad-ready ranges, 20 training steps tracking the CPU loss curve (ZeRO-0
// and ZeRO-3, which gathers parameter groups on the device), and a bit-exact resume of a bf16 run
// with stochastic rounding. Every test skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/checkpoint_io.h"
#include "core/config.h"
#include "core/exec.h"
#include "core/model/init_weights.h"
#include "core/model/model.h"
#include "core/rng.h"
#include "launch/train/trainer.h"
#include "parallel/comm/local/local_communicator.h"
#include "tests/gpu_test_util.h"
#include "tests/test_util.h"

namespace tt::test {
namespace {

constexpr int kB = 2, kT = 24;

// Head size 32 (a size the flash kernel takes), padded vocabulary 128 > V.
std::vector<ModelDesc> small_descs() { return {gpt2_desc(2, 2, 64, 100, 32), llama_desc(2, 4, 2, 128, 100, 32, 96)}; }

std::vector<int32_t> random_tokens(int64_t n, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (auto& t : out) t = int32_t(rng.next_u64() % uint64_t(V));
  return out;
}

double l2(const float* a, const float* b, int64_t n) {  // ||a - b|| (b may be null: ||a||)
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - (b ? double(b[i]) : 0.0);
    s += d * d;
  }
  return std::sqrt(s);
}

// The device's gradient buffer as fp32 on the host.
std::vector<float> grads_to_host(Model& m) {
  std::vector<float> out(size_t(m.num_params()));
  if (m.dtype() == DType::kF32) {
    copy_sync(m.exec(), out.data(), m.grads().raw(), out.size() * sizeof(float));
    return out;
  }
  std::vector<uint16_t> bits(out.size());
  copy_sync(m.exec(), bits.data(), m.grads().raw(), bits.size() * 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = bf16_to_f32(bits[i]);
  return out;
}

void check_grads(const ModelDesc& desc, DType dtype, double rtol, double atol, const Recompute& recompute = {}) {
  ModelOptions cpu_opts;
  cpu_opts.max_batch = kB;
  cpu_opts.max_seq = kT;
  Model cpu(desc, cpu_opts);
  float* w = cpu.params().data<float>();
  init_weights(desc, cpu.layout(), 7, 0, cpu.num_params(), w);
  if (dtype == DType::kBF16)  // the same (bf16) weights on both sides: only activations differ
    for (int64_t i = 0; i < cpu.num_params(); ++i) w[i] = bf16_to_f32(f32_to_bf16(w[i]));
  const auto inputs = random_tokens(kB * kT, desc.vocab_size, 1), targets = random_tokens(kB * kT, desc.vocab_size, 2);
  cpu.forward(inputs.data(), targets.data(), kB, kT);
  const float cpu_loss = cpu.take_loss_sum();
  cpu.zero_grad();
  cpu.backward(0.5f);

  DeviceStream stream(Device::cuda(0));
  ModelOptions gpu_opts = cpu_opts;
  gpu_opts.exec = stream.exec();
  gpu_opts.dtype = dtype;
  gpu_opts.recompute = recompute;
  Model gpu(desc, gpu_opts);
  if (dtype == DType::kF32) {
    copy_sync(gpu.exec(), gpu.params().raw(), w, size_t(cpu.num_params()) * sizeof(float));
  } else {
    std::vector<uint16_t> bits(size_t(cpu.num_params()));
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = f32_to_bf16(w[i]);
    copy_sync(gpu.exec(), gpu.params().raw(), bits.data(), bits.size() * 2);
  }
  std::vector<std::pair<int64_t, int64_t>> ranges;
  gpu.set_grad_ready_callback([&](int64_t b, int64_t e) { ranges.push_back({b, e}); });
  gpu.forward(inputs.data(), targets.data(), kB, kT);
  const float gpu_loss = gpu.take_loss_sum();
  gpu.zero_grad();
  gpu.backward(0.5f);
  const std::vector<float> g = grads_to_host(gpu);
  const std::string what =
      desc.str() + (dtype == DType::kBF16 ? " bf16" : " fp32") + " recompute " + describe(recompute, desc.n_layer);

  EXPECT_NEAR(gpu_loss, cpu_loss, (dtype == DType::kBF16 ? 1e-2 : 1e-5) * cpu_loss) << what << " loss";
  const float* ref = cpu.grads().data<float>();
  for (const ParamInfo& p : cpu.layout().tensors) {
    const int64_t n = shape_numel(p.shape);
    const double err = l2(g.data() + p.offset, ref + p.offset, n), norm = l2(ref + p.offset, nullptr, n);
    EXPECT_LE(err, rtol * norm + atol * std::sqrt(double(n)))
        << what << " " << p.name << ": |gpu - cpu| " << err << " vs |cpu| " << norm << " (relative " << err / norm
        << ")";
  }
  for (int64_t table : {cpu.layout().tok_emb, cpu.layout().lm_head})  // padding rows get no gradient
    for (int64_t i = int64_t(desc.vocab_size) * desc.n_embd; i < int64_t(desc.padded_vocab_size) * desc.n_embd; ++i)
      ASSERT_EQ(g[size_t(table + i)], 0.0f) << what << " padding row gradient at " << i;
  ASSERT_FALSE(ranges.empty());
  EXPECT_EQ(ranges.front().second, gpu.num_params());
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].second, ranges[i - 1].first) << "range " << i;
  EXPECT_EQ(ranges.back().first, 0);
}

TEST(ModelGpu, Fp32GradsMatchCpu) {
  TT_REQUIRE_GPU();
  for (const ModelDesc& d : small_descs()) check_grads(d, DType::kF32, 1e-4, 1e-7);
}

TEST(ModelGpu, Bf16GradsMatchCpu) {
  TT_REQUIRE_GPU();
  for (const ModelDesc& d : small_descs()) check_grads(d, DType::kBF16, 5e-2, 1e-5);
}

// Activation recompute on the device (selective rebuilds norms with the unfused kernel and the MLP
// activation outside the GEMM epilogue; full re-runs the block's forward) against the CPU, which
// keeps everything: the same tolerances as without recompute.
TEST(ModelGpu, RecomputeGradsMatchCpu) {
  TT_REQUIRE_GPU();
  for (const ModelDesc& d : small_descs())
    for (RecomputeMode mode : {RecomputeMode::kSelective, RecomputeMode::kFull}) {
      check_grads(d, DType::kF32, 1e-4, 1e-7, {mode, 0});
      check_grads(d, DType::kBF16, 5e-2, 1e-5, {mode, 1});
    }
}

// ---- the training loop ---------------------------------------------------------------------------

// The synthetic corpus (order-2 Markov chain over 100 symbols, learnable) written once per test.
class TrainerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TT_REQUIRE_GPU();
    auto r =
        run_topotrain("data synth --out " + dir_.file("data") +
                      " --vocab 100 --order 2 --concentration 30 --seed 3 --train-tokens 200000 --val-tokens 20000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  config::Config run_config(const std::string& arch, const std::vector<std::string>& sets) {
    std::vector<std::string> all = {"model.n_layer=2",
                                    "model.n_embd=128",
                                    "model.n_head=4",
                                    "model.vocab_size=100",
                                    "model.max_seq_len=32",
                                    "train.batch_size=2",
                                    "train.seq_len=24",
                                    "train.val_every=0",
                                    "train.log_every=100",
                                    "optimizer.warmup_steps=2",
                                    "optimizer.lr=3e-3",
                                    "data.train=" + dir_.file("data/train.bin"),
                                    "data.val=" + dir_.file("data/val.bin"),
                                    "checkpoint.every=0"};
    all.insert(all.end(), sets.begin(), sets.end());
    return load_config(source_dir() + "/examples/" + arch + "-tiny-synth.pbtxt", all);
  }

  // Losses of `steps` steps of a run with these settings.
  std::vector<float> losses(const std::string& arch, const std::vector<std::string>& sets, int steps) {
    parallel::LocalCommunicator comm;
    Trainer trainer(run_config(arch, sets), "test", comm);
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
      const StepStats s = trainer.step(i);
      EXPECT_TRUE(std::isfinite(s.grad_norm) && s.grad_norm > 0) << "step " << i;
      out.push_back(s.loss);
    }
    return out;
  }

  TempDir dir_;
};

TEST_F(TrainerGpu, CudaTracksTheCpuLossCurveAtZero0AndZero3) {
  for (const std::string arch : {"gpt2", "llama"}) {
    const auto cpu = losses(arch, {"train.device=cpu"}, 20);
    EXPECT_LT(cpu.back(), 0.8f * cpu.front()) << arch << ": 20 steps must lower the loss";
    for (const auto& [sets, rtol] : std::vector<std::pair<std::vector<std::string>, double>>{
             {{"train.device=cuda", "train.precision=fp32"}, 1e-3},
             {{"train.device=cuda", "train.precision=fp32", "parallel.zero_stage=3"}, 1e-3},
             {{"train.device=cuda", "train.precision=bf16"}, 0.04},
             {{"train.device=cuda", "train.precision=bf16", "parallel.zero_stage=3"}, 0.04}}) {
      const auto gpu = losses(arch, sets, 20);
      for (size_t i = 0; i < gpu.size(); ++i)
        EXPECT_NEAR(gpu[i], cpu[i], rtol * cpu[i]) << arch << " " << sets.back() << " step " << i;
    }
  }
}

// fp8 and int8 linear layers on the GPU (cuBLASLt fp8, IMMA int8, the fused quantisers) follow the
// CPU's exact emulation of the same recipe over 20 steps: fp32 working precision on both, so what
// differs is only the GEMMs' fp32/int32 accumulation order moving an occasional code (measured on
// no GPU yet: the tolerance is the bf16 run's). fp8 only where the GPU has it (sm_89+).
TEST_F(TrainerGpu, Fp8AndInt8TrackTheCpuEmulation) {
  const int cc = device_compute_capability(Device::cuda(0));
  for (const std::string arch : {"gpt2", "llama"})
    for (const std::string precision : {"int8", "fp8"}) {
      if (precision == "fp8" && cc < 89) continue;
      const std::vector<std::string> common = {"train.precision=fp32", "train.matmul_precision=" + precision};
      std::vector<std::string> cpu_sets = common, gpu_sets = common;
      cpu_sets.push_back("train.device=cpu");
      gpu_sets.push_back("train.device=cuda");
      const auto cpu = losses(arch, cpu_sets, 20), gpu = losses(arch, gpu_sets, 20);
      EXPECT_LT(cpu.back(), 0.8f * cpu.front()) << arch << " " << precision;
      for (size_t i = 0; i < gpu.size(); ++i)
        EXPECT_NEAR(gpu[i], cpu[i], 0.04 * cpu[i]) << arch << " " << precision << " step " << i;
    }
}

// A bf16 run with stochastic rounding, checkpointed at step 3 and resumed, reproduces the
// uninterrupted run's losses bit for bit (the bf16 working copy is re-derived with step 3's rounding).
TEST_F(TrainerGpu, Bf16ResumeWithStochasticRoundingIsBitExact) {
  for (const std::string arch : {"gpt2", "llama"}) {
    const std::vector<std::string> sets = {
        "train.device=cuda", "train.precision=bf16", "train.stochastic_rounding=true",
        "train.steps=6",     "checkpoint.every=3",   "logging.run_dir=" + dir_.file("run_" + arch)};
    parallel::LocalCommunicator comm;
    std::vector<float> full;
    {
      Trainer trainer(run_config(arch, sets), "test", comm);
      trainer.train(false);
      for (const auto& [step, rec] : read_step_metrics(dir_.file("run_" + arch + "/metrics.jsonl")))
        full.push_back(std::stof(rec.loss));
    }
    std::filesystem::remove(checkpoint_path(dir_.file("run_" + arch + "/checkpoints"), 6));
    Trainer resumed(run_config(arch, sets), "test", comm);
    resumed.train(true);
    const auto after = read_step_metrics(dir_.file("run_" + arch + "/metrics.jsonl"));
    ASSERT_EQ(after.size(), 6u);
    for (const auto& [step, rec] : after) EXPECT_EQ(std::stof(rec.loss), full[size_t(step - 1)]) << arch << " " << step;
  }
}

}  // namespace
}  // namespace tt::test
