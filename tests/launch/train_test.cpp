// End-to-end tests of the `topotrain` binary: training on the synthetic corpus reaches its entropy
// floor, resume reproduces the uninterrupted run bit for bit, and bad input gives the documented
// error and exit code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "core/checkpoint_io.h"
#include "core/config.h"
#include "data/synth.h"
#include "launch/train/train_device.h"
#include "tests/launch/tiny_corpus.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using test::run_topotrain;
using test::TempDir;

using test::config_path;
using test::make_corpus;

// The training suites that run for every architecture: GPT-2 and a Llama (GQA, RoPE, SwiGLU).
class TrainArch : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Archs, TrainArch, ::testing::Values("gpt2", "llama"));

TEST_P(TrainArch, SyntheticCorpusReachesWithin5PercentOfEntropyFloor) {
  TempDir dir;
  const std::string sets = make_corpus(dir);
  auto r = run_topotrain(
      "train --config " + config_path(GetParam()) + sets +
      " --set train.steps=1000 --set train.batch_size=16 --set train.val_every=0 --set optimizer.warmup_steps=50");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto manifest = data::read_synth_manifest(dir.file("data/synth.json"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("val loss ([0-9.]+)"))) << r.output;
  const double val = std::stod(m[1]);
  std::smatch seq;  // the run's batch shape, as logged

  ASSERT_TRUE(std::regex_search(r.output, seq, std::regex("seq_len=([0-9]+)"))) << r.output;
  const double floor = manifest.window_floor(std::stoi(seq[1]));
  EXPECT_GT(val, floor * 0.98) << "a loss below the entropy floor means the validation data leaked";
  EXPECT_LT(val, floor * 1.05) << "val loss " << val << " vs floor " << floor << "\n" << r.output;

  // metrics.jsonl splits every step's time into parts that never add up to more than the step and,
  // over the run, account for most of it (the rest: zeroing gradients, averaging the loss).
  std::ifstream metrics(dir.file("run/metrics.jsonl"));
  ASSERT_TRUE(metrics) << "no metrics.jsonl";
  double steps_s = 0, parts_s = 0;
  int lines = 0;
  for (std::string line; std::getline(metrics, line); ++lines) {
    const auto j = nlohmann::json::parse(line);
    double parts = 0;
    for (const char* key : {"data_s", "forward_s", "backward_s", "optimizer_s", "exposed_comm_s"}) {
      ASSERT_TRUE(j.contains(key)) << key << " missing from " << line;
      EXPECT_GE(j.at(key).get<double>(), 0.0) << key << " in " << line;
      parts += j.at(key).get<double>();
    }
    EXPECT_LE(parts, j.at("step_s").get<double>() + 1e-6) << line;
    steps_s += j.at("step_s").get<double>();
    parts_s += parts;
  }
  EXPECT_EQ(lines, 1000);
  EXPECT_GT(parts_s, 0.8 * steps_s) << "the parts cover " << parts_s << " s of " << steps_s << " s";
}

// 8-bit AdamW moments (block-wise, dynamic map) train as well as fp32 moments: the same run's final
// validation loss within 1% (training loss starts ~2.8 and the floor is ~1.1, so a broken optimizer
// misses by far more).
TEST_P(TrainArch, Int8AdamWStateEndsWithinOnePercentOfFp32) {
  TempDir dir;
  const std::string sets = make_corpus(dir) +
                           " --set train.steps=1000 --set train.batch_size=16 --set train.val_every=0"
                           " --set optimizer.warmup_steps=50";
  double val[2];
  const char* states[] = {"fp32", "int8"};
  for (int i = 0; i < 2; ++i) {
    auto r =
        run_topotrain("train --config " + config_path(GetParam()) + sets + " --set optimizer.state_dtype=" + states[i] +
                      " --set logging.run_dir=" + dir.file(states[i]));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex("val loss ([0-9.]+)"))) << r.output;
    val[i] = std::stod(m[1]);
  }
  EXPECT_LE(std::fabs(val[1] - val[0]), 0.01 * val[0]) << "fp32 state " << val[0] << ", int8 state " << val[1];
}

TEST_P(TrainArch, ResumeReproducesUninterruptedLossesBitForBit) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=16 --set checkpoint.every=8";
  auto full = run_topotrain("train --config " + config_path(GetParam()) + sets);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto uninterrupted = test::metric_by_step(dir.file("run/metrics.jsonl"));
  ASSERT_EQ(uninterrupted.size(), 16u);

  // A second run directory holding only the mid-run checkpoint, as if the run had died after step 8.
  fs::create_directories(dir.file("resumed/checkpoints"));
  fs::copy_file(checkpoint_path(dir.file("run/checkpoints"), 8), checkpoint_path(dir.file("resumed/checkpoints"), 8));
  auto resumed = run_topotrain("train --config " + config_path(GetParam()) + sets +
                               " --set logging.run_dir=" + dir.file("resumed") + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto after = test::metric_by_step(dir.file("resumed/metrics.jsonl"));
  ASSERT_EQ(after.size(), 8u);
  for (const auto& [step, loss] : after) EXPECT_EQ(loss, uninterrupted.at(step)) << "step " << step;
  EXPECT_EQ(after.begin()->first, 9);
}

TEST(Train, ResumeSkipsACorruptNewestCheckpoint) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=8 --set checkpoint.every=4";
  ASSERT_EQ(run_topotrain("train --config " + config_path() + sets).exit_code, 0);
  const std::string newest = checkpoint_path(dir.file("run/checkpoints"), 8);
  {
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    f.put('\x5a');
  }
  auto r = run_topotrain("train --config " + config_path() + sets + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("checksum mismatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 4"), std::string::npos) << r.output;
}

TEST(Train, SampleFromCheckpointPrintsTextOfTheAlphabet) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=4";
  ASSERT_EQ(run_topotrain("train --config " + config_path() + sets).exit_code, 0);
  auto r = run_topotrain("sample --checkpoint " + dir.file("run") + " --prompt 'the ' --tokens 40 --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the "), std::string::npos);
  auto again = run_topotrain("sample --checkpoint " + dir.file("run") + " --prompt 'the ' --tokens 40 --seed 3");
  EXPECT_EQ(r.output, again.output) << "sampling with a fixed seed must be deterministic";
  auto bad = run_topotrain("sample --checkpoint " + dir.file("run") + " --prompt 'the~' --tokens 4");
  EXPECT_EQ(bad.exit_code, 3) << bad.output;
}

TEST(Cli, MalformedConfigsExitWith2AndNameFieldAndFile) {
  TempDir dir;
  const std::string base = test::read_file(config_path());
  struct Case {
    std::string from, to, expect;
  };
  const std::vector<Case> cases = {
      {"n_layer: 2", "n_layers: 2", "n_layers"},
      {"batch_size: 8", "batch_size: \"four\"", "batch_size"},
      {"n_embd: 64", "n_embd: 66", "n_embd"},
      {"lr: 1e-2", "lr: -1", "optimizer.lr"},
      {"batch_size: 8", "batch_size: 0", "train.batch_size"},
  };
  for (const auto& c : cases) {
    std::string text = base;
    ASSERT_NE(text.find(c.from), std::string::npos) << c.from;
    text.replace(text.find(c.from), c.from.size(), c.to);
    const std::string path = dir.file("bad.pbtxt");
    test::write_file(path, text);
    auto r = run_topotrain("train --config " + path);
    EXPECT_EQ(r.exit_code, 2) << c.to << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("bad.pbtxt"), std::string::npos) << r.output;
  }
  auto r = run_topotrain("train --config " + config_path() + " --set train.seq_len=100000");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("seq_len"), std::string::npos) << r.output;
}

TEST(Cli, CorruptShardExitsWith3NamingTheFile) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000);
  const std::string shard = dir.file("data/train.bin");
  fs::resize_file(shard, fs::file_size(shard) - 10);
  auto r = run_topotrain("train --config " + config_path() + sets);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("train.bin"), std::string::npos) << r.output;
  test::write_file(shard, std::string(2048, 'x'));
  r = run_topotrain("train --config " + config_path() + sets);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("magic"), std::string::npos) << r.output;
}

TEST(Cli, CorruptCheckpointExitsWith4) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=2";
  ASSERT_EQ(run_topotrain("train --config " + config_path() + sets).exit_code, 0);
  const std::string ckpt = checkpoint_path(dir.file("run/checkpoints"), 2);
  {
    std::fstream f(ckpt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5000);
    f.put('\x01');
  }
  auto r = run_topotrain("sample --checkpoint " + ckpt + " --tokens 3");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("checksum"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step_00000002.ckpt"), std::string::npos) << r.output;
}

TEST(Cli, MismatchedCheckpointIsRejectedOnResume) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=2";
  ASSERT_EQ(run_topotrain("train --config " + config_path() + sets).exit_code, 0);
  auto r = run_topotrain("train --config " + config_path() + sets + " --set model.n_layer=3 --resume");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("does not match"), std::string::npos) << r.output;
}

TEST(Cli, MemoryBudgetTooSmallExitsWith5NamingTheTensor) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000);
  auto r = run_topotrain("train --config " + config_path() + sets + " --set train.memory_budget_bytes=200000");
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("memory budget"), std::string::npos) << r.output;
  // The memory plan is checked before anything is allocated: it names the biggest consumers.
  EXPECT_NE(r.output.find("the biggest consumers are activations"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("run/checkpoints"))) << "nothing is written for a run that cannot fit";
}

// bench step --recompute a,b --trace F keeps one trace per mode (F's name with the mode before the
// extension), each a trace of its own measured steps, and prints one table row per mode.
TEST(BenchStep, RecomputeModesTraceEachModeToItsOwnFile) {
  TempDir dir;
  auto r = run_topotrain("bench step --config " + config_path("gpt2") +
                         " --steps 2 --warmup 1 --recompute none,full --trace " + dir.file("steps.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("steps.json")));
  for (const char* mode : {"none", "full"}) {
    const std::string path = dir.file(std::string("steps.") + mode + ".json");
    ASSERT_TRUE(fs::exists(path)) << path << "\n" << r.output;
    const auto doc = nlohmann::json::parse(test::read_file(path));
    int steps = 0;
    for (const auto& e : doc.at("traceEvents")) steps += e.at("ph") == "X" && e.value("cat", "") == "step";
    EXPECT_EQ(steps, 2) << path;
    EXPECT_TRUE(std::regex_search(r.output, std::regex(std::string("\\n") + mode + " +[0-9.]+"))) << r.output;
  }
}

TEST(Cli, VersionHelpAndUnknownCommand) {
  auto v = run_topotrain("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.output.find("BLAS"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("CUDA"), std::string::npos) << v.output;
  for (const char* cmd : {"train --help", "sample --help", "bench step --help", "data synth --help"}) {
    auto h = run_topotrain(cmd);
    EXPECT_EQ(h.exit_code, 0) << cmd << "\n" << h.output;
    EXPECT_NE(h.output.find("usage"), std::string::npos) << cmd;
  }
  auto u = run_topotrain("trian");
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_NE(u.output.find("unknown command"), std::string::npos);
  auto o = run_topotrain("train --confg x");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.output.find("--confg"), std::string::npos);
}

}  // namespace
}  // namespace tt

namespace tt {
namespace {

// Text -> `data encode` with the GPT-2 tokenizer -> train -> sample: the checkpoint carries the
// tokenizer, so the prompt is encoded and the sample decoded as text.
TEST(Train, Gpt2TokenizedDataSetTrainsAndSamplesText) {
  const std::string shared = test::shared_dir();
  if (shared.empty() || !fs::exists(shared + "/data/gpt2/encoder.json"))
    GTEST_SKIP() << "../shared/data/gpt2 not present";
  TempDir dir;
  std::string text;
  for (int i = 0; i < 400; ++i)
    text += "The quick brown fox jumps over the lazy dog number " + std::to_string(i) + ".\n";
  test::write_file(dir.file("text.txt"), text);
  auto enc = run_topotrain("data encode --tokenizer " + shared + "/data/gpt2 --input " + dir.file("text.txt") +
                           " --out " + dir.file("data") + " --val-tokens 2000 --quiet");
  ASSERT_EQ(enc.exit_code, 0) << enc.output;
  auto tr = run_topotrain("train --config " + config_path() + " --set \"data.train=" + dir.file("data") +
                          "/data_train_*.bin\" --set \"data.val=" + dir.file("data") + "/data_val_*.bin\"" +
                          " --set logging.run_dir=" + dir.file("run") +
                          " --set model.vocab_size=50257 --set train.steps=3 --set optimizer.warmup_steps=1");
  ASSERT_EQ(tr.exit_code, 0) << tr.output;
  auto s = run_topotrain("sample --checkpoint " + dir.file("run") + " --prompt 'The quick brown' --tokens 5 --seed 2");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("byte-level BPE tokenizer (50257 tokens"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("The quick brown"), std::string::npos) << s.output;
}

// ---- train.device / train.precision / train.stochastic_rounding ----------------------------------

config::Config device_config(const std::vector<std::string>& sets = {}) {
  return parse_config_text(test::read_file(test::source_dir() + "/examples/gpt2-124m.pbtxt"), "gpt2-124m.pbtxt", sets);
}

// Facts of a process on a machine with `gpus` GPUs, in a build with CUDA.
DeviceFacts gpu_machine(int gpus, int world = 1, const std::string& backend = "local", int local_rank = 0) {
  DeviceFacts f;
  f.build_has_cuda = true;
  f.cuda_devices = gpus;
  f.world_size = world;
  f.local_rank = local_rank;
  f.comm_backend = backend;
  return f;
}

// The kConfig error resolve_train_device throws, or fails the test.
Error device_error(const config::Config& cfg, const DeviceFacts& f) {
  try {
    const TrainDevice d = resolve_train_device(cfg, f);
    ADD_FAILURE() << "expected a config error, got " << d.str();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig) << e.what();
    return e;
  }
  return Error(ErrorKind::kInternal, "");
}

TEST(TrainDevice, AutoPicksTheGpuWhenThereIsOneAndDefaultsItsPrecision) {
  const config::Config cfg = device_config();
  EXPECT_EQ(cfg.train().device(), "auto");  // filled default
  const TrainDevice cpu = resolve_train_device(cfg, DeviceFacts{});
  EXPECT_FALSE(cpu.is_cuda());
  EXPECT_EQ(cpu.dtype, DType::kF32);
  EXPECT_TRUE(cpu.note.empty()) << cpu.note;
  const TrainDevice gpu = resolve_train_device(cfg, gpu_machine(4, 8, "nccl", 6));
  EXPECT_TRUE(gpu.is_cuda());
  EXPECT_EQ(gpu.device.index, 2);  // local_rank % visible devices, as the NCCL backend picks
  EXPECT_EQ(gpu.dtype, DType::kBF16);
  EXPECT_EQ(gpu.str(), "cuda:2 bf16");
  const TrainDevice fp32 = resolve_train_device(device_config({"train.precision=fp32"}), gpu_machine(1));
  EXPECT_EQ(fp32.dtype, DType::kF32);
  // Compressed payloads, the hierarchical shape and ZeRO run on the GPU too (GradReducer on the device).
  for (const char* set : {"parallel.grad_compression=int8", "parallel.grad_compression=bf16",
                          "parallel.collective=hierarchical", "parallel.zero_stage=1", "parallel.zero_stage=2"})
    EXPECT_TRUE(resolve_train_device(device_config({set}), gpu_machine(8, 8, "nccl")).is_cuda()) << set;
  const TrainDevice sr = resolve_train_device(device_config({"train.stochastic_rounding=true"}), gpu_machine(1));
  EXPECT_TRUE(sr.stochastic_rounding);
  EXPECT_EQ(sr.str(), "cuda:0 bf16 (stochastic rounding)");
}

TEST(TrainDevice, AutoFallsBackToTheCpuAndSaysWhy) {
  // The quick start's head size 16 is not one the CUDA attention kernels take.
  const config::Config tiny = parse_config_text(test::read_file(config_path()), "tiny.pbtxt");
  TrainDevice d = resolve_train_device(tiny, gpu_machine(1));
  EXPECT_FALSE(d.is_cuda());
  EXPECT_NE(d.note.find("head size 16"), std::string::npos) << d.note;
  d = resolve_train_device(device_config(), gpu_machine(2, 2, "mpi"));
  EXPECT_FALSE(d.is_cuda());
  EXPECT_NE(d.note.find("NCCL"), std::string::npos) << d.note;
  // Two ranks on a one-GPU node (e.g. `mpirun -np 2` on a workstation): NCCL needs a GPU per rank.
  DeviceFacts crowded = gpu_machine(1, 2, "nccl", 1);
  crowded.local_size = 2;
  d = resolve_train_device(device_config(), crowded);
  EXPECT_FALSE(d.is_cuda());
  EXPECT_NE(d.note.find("2 ranks on this node share 1 visible GPU"), std::string::npos) << d.note;
  // ZeRO-3 runs on GPUs too (one training loop); a head size the CUDA attention lacks names the field.
  EXPECT_TRUE(resolve_train_device(device_config({"parallel.zero_stage=3"}), gpu_machine(8, 8, "nccl")).is_cuda());
  EXPECT_EQ(device_error(device_config({"train.device=cuda", "model.head_dim=48"}), gpu_machine(8, 8, "nccl")).where(),
            "model.head_dim");
  EXPECT_EQ(device_error(device_config({"train.device=cuda"}), crowded).where(), "train.device");
  EXPECT_EQ(comm_backend_for(device_config(), crowded), "auto");  // so the CPU run gets MPI
  // bf16 asked for a run that lands on the CPU: the error says both.
  const Error e = device_error(device_config({"train.precision=bf16"}), gpu_machine(2, 2, "mpi"));
  EXPECT_EQ(e.where(), "train.precision");
  EXPECT_NE(e.problem().find("NCCL"), std::string::npos) << e.what();
}

TEST(TrainDevice, CudaThatCannotRunIsAConfigErrorNamingTheField) {
  const config::Config cuda = device_config({"train.device=cuda"});
  DeviceFacts no_build;
  EXPECT_NE(device_error(cuda, no_build).problem().find("built without CUDA"), std::string::npos);
  Error e = device_error(cuda, gpu_machine(0));
  EXPECT_EQ(e.where(), "train.device");
  EXPECT_NE(e.problem().find("no CUDA device"), std::string::npos) << e.what();
  e = device_error(cuda, gpu_machine(2, 2, "mpi"));
  EXPECT_EQ(e.where(), "train.device");
  config::Config sr_fp32 = device_config({"train.device=cuda", "train.precision=fp32"});
  sr_fp32.mutable_train()->set_stochastic_rounding(true);  // validation alone already rejects it
  e = device_error(sr_fp32, gpu_machine(1));
  EXPECT_EQ(e.where(), "train.stochastic_rounding");
}

TEST(TrainDevice, AMatmulPrecisionTheGpuLacksNamesTheGpuAndTheModesItHas) {
  const TrainDevice gpu = resolve_train_device(device_config(), gpu_machine(1));
  const config::Config fp8 = device_config({"train.matmul_precision=fp8"});
  try {
    check_matmul_precision(fp8, gpu, "NVIDIA A100-SXM4-80GB", 80);
    ADD_FAILURE() << "fp8 on an A100 must be refused";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(what.find("train.matmul_precision"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA A100-SXM4-80GB (sm_80)"), std::string::npos) << what;
    EXPECT_NE(what.find("runs default, int8"), std::string::npos) << what;
    EXPECT_NE(what.find("train.device \"cpu\""), std::string::npos) << what;
  }
  EXPECT_NO_THROW(check_matmul_precision(fp8, gpu, "NVIDIA H100 80GB HBM3", 90));
  EXPECT_NO_THROW(check_matmul_precision(device_config({"train.matmul_precision=int8"}), gpu, "NVIDIA A100", 80));
  EXPECT_THROW(check_matmul_precision(device_config({"train.matmul_precision=int8"}), gpu, "Tesla V100", 70), Error);
  // The CPU emulates every mode.
  EXPECT_NO_THROW(check_matmul_precision(fp8, resolve_train_device(fp8, DeviceFacts{}), "cpu", 0));
  EXPECT_EQ(gpu_matmul_precisions(89), "default, fp8, int8");
}

TEST(TrainDevice, ProcessGroupUsesNcclForMultiRankCudaRuns) {
  const std::string nccl = TOPOTRAIN_HAVE_NCCL ? "nccl" : "auto";
  EXPECT_EQ(comm_backend_for(device_config(), gpu_machine(8, 8, "")), nccl);
  EXPECT_EQ(comm_backend_for(device_config({"train.device=cuda"}), gpu_machine(8, 8, "")), nccl);
  EXPECT_EQ(comm_backend_for(device_config(), gpu_machine(1, 1, "")), "auto");  // one rank: no collectives
  EXPECT_EQ(comm_backend_for(device_config({"train.device=cpu"}), gpu_machine(8, 8, "")), "auto");
  EXPECT_EQ(comm_backend_for(device_config(), gpu_machine(0, 8, "")), "auto");
  const config::Config tiny = parse_config_text(test::read_file(config_path()), "tiny.pbtxt");
  EXPECT_EQ(comm_backend_for(tiny, gpu_machine(8, 8, "")), "auto");  // head size 16 trains on the CPU
}

TEST(TrainDevice, ConfigValidationNamesTheField) {
  auto problem = [](const std::vector<std::string>& sets) {
    try {
      device_config(sets);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string msg = problem({"train.device=gpu"});
  EXPECT_NE(msg.find("--set train.device=gpu: train.device \"gpu\" is not supported"), std::string::npos) << msg;
  msg = problem({"train.precision=fp16"});
  EXPECT_NE(msg.find("train.precision \"fp16\" is not supported"), std::string::npos) << msg;
  msg = problem({"train.device=cpu", "train.precision=bf16"});
  EXPECT_NE(msg.find("train.precision \"bf16\" needs train.device \"cuda\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("hint:"), std::string::npos) << msg;
  msg = problem({"train.device=cpu", "train.stochastic_rounding=true"});
  EXPECT_NE(msg.find("train.stochastic_rounding applies to bf16 weights only"), std::string::npos) << msg;
  EXPECT_EQ(problem({"train.device=cuda", "train.precision=bf16", "train.stochastic_rounding=true"}), "no error");
  msg = problem({"parallel.zero_stage=4"});
  EXPECT_NE(msg.find("parallel.zero_stage must be 0, 1, 2 or 3 (got 4)"), std::string::npos) << msg;
  EXPECT_EQ(problem({"parallel.zero_stage=3"}), "no error");
}

// End to end: the quick-start model cannot run on CUDA (no device here; head size 16 on a GPU
// machine), so train.device=cuda exits 2 naming train.device, and bf16 names train.precision.
TEST(Cli, DeviceAndPrecisionErrorsExitWith2) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=2";
  auto r = run_topotrain("train --config " + config_path() + sets + " --set train.device=cuda");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("train.device"), std::string::npos) << r.output;
  r = run_topotrain("train --config " + config_path() + sets + " --set train.precision=bf16");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("train.precision"), std::string::npos) << r.output;
  r = run_topotrain("train --config " + config_path() + sets);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| cpu fp32 |"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tt
