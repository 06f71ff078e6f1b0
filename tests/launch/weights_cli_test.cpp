// Pretrained weights through the binary: `eval` gives transformers' loss on every committed fixture;
// a run exported (Hugging Face or llm.c) and started from again with model.init_from has its
// weights bit for bit; transformers loads the export and agrees with `eval` (skipped when the
// package is absent); bad input exits 4 naming the file and tensor and writes nothing; a config
// field that disagrees with the weights names both values; and loading a ~1 GB bf16 model peaks at
// its fp32 size plus one tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/model/hf_checkpoint.h"
#include "core/model/weights.h"
#include "launch/train/trainer.h"
#include "parallel/comm/local/local_communicator.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::run_topotrain;

std::string fixture(const std::string& name) { return test::source_dir() + "/tests/fixtures/models/" + name; }

bool have_fixtures() { return fs::exists(fixture("eval_tokens.bin")); }

json eval_json(const std::string& model, const std::string& extra = "") {
  const auto r = run_topotrain("eval --model " + model + " --data " + fixture("eval_tokens.bin") +
                               " --batch-size 2 --seq-len 12 --json " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string line = r.output.substr(r.output.rfind("{\"batch"));
  return json::parse(line);
}

TEST(EvalCli, GivesTransformersLossOnEveryFixture) {
  if (!have_fixtures()) GTEST_SKIP() << "tests/fixtures/models not present";
  for (const char* name : {"gpt2-tiny", "gpt2-published", "llama-gqa-tiny", "llama-bf16-shards"}) {
    const json want = json::parse(test::read_file(fixture(name) + "/case.json"))["eval"];
    const json got = eval_json(fixture(name));
    EXPECT_NEAR(got["loss"].get<double>(), want["loss"].get<double>(), 1e-5 * want["loss"].get<double>()) << name;
    const double ppl = std::exp(want["loss"].get<double>());
    EXPECT_NEAR(got["perplexity"].get<double>(), ppl, 2e-5 * ppl) << name;
    EXPECT_EQ(got["tokens"], 72) << name;  // 3 batches (all of the shard) of 2 x 12
    EXPECT_EQ(got["batches"], 3) << name;
  }
  const auto text = run_topotrain("eval --model " + fixture("gpt2-tiny") + " --data " + fixture("eval_tokens.bin") +
                                  " --batch-size 2 --seq-len 12 --batches 2");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("perplexity"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("48 tokens (2 batches of 2 x 12)"), std::string::npos) << text.output;
}

// A short run on the synthetic corpus (vocab 16), checkpointed at its end.
std::string train_run(const test::TempDir& dir, const std::string& arch, const std::string& run) {
  if (!fs::exists(dir.file("data/train.bin"))) {
    auto r = run_topotrain("data synth --out " + dir.file("data") +
                           " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 50000 --val-tokens 5000");
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  const std::string sets =
      " --set data.train=" + dir.file("data/train.bin") + " --set data.val=" + dir.file("data/val.bin") +
      " --set model.vocab_size=16 --set train.steps=4" +
      " --set optimizer.warmup_steps=1 --set train.val_every=0 --set logging.run_dir=" + dir.file(run);
  auto r = run_topotrain("train --config " + test::source_dir() + "/examples/" + arch + "-tiny-synth.pbtxt" + sets);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir.file(run);
}

std::vector<float> all_params(const std::string& path) {
  const auto s = open_weights(path);
  std::vector<float> out(size_t(s->layout().numel));
  s->read(0, s->layout().numel, out.data());
  return out;
}

TEST(ExportCli, ExportAndInitFromKeepEveryWeightBitForBit) {
  test::TempDir dir;
  for (const std::string arch : {"gpt2", "llama"}) {
    SCOPED_TRACE(arch);
    const std::string run = train_run(dir, arch, arch + "_run");
    const std::string hf = dir.file(arch + "_hf");
    auto r = run_topotrain("export --checkpoint " + run + " --format hf --out " + hf);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::vector<float> trained = all_params(run);
    EXPECT_EQ(all_params(hf), trained);
    // A new run from the export starts from exactly these weights (any ZeRO stage reads its part).
    for (int zero : {0, 3}) {
      config::Config cfg = load_config(test::source_dir() + "/examples/" + arch + "-tiny-synth.pbtxt",
                                       {"model.init_from=" + hf, "data.train=" + dir.file("data/train.bin"),
                                        "data.val=", "parallel.zero_stage=" + std::to_string(zero),
                                        "logging.run_dir=" + dir.file(arch + "_from_hf")});
      // The example sets the model fields: they agree with the export (vocab 16 aside).
      cfg.mutable_model()->set_vocab_size(16);
      parallel::LocalCommunicator comm;
      Trainer trainer(cfg, "test", comm);
      Model* host = trainer.host_model();
      ASSERT_NE(host, nullptr);
      EXPECT_EQ(0, std::memcmp(host->params().data<float>(), trained.data(), trained.size() * 4)) << "zero " << zero;
    }
    // And through the binary: the run logs where its weights came from and trains.
    r = run_topotrain("train --config " + test::source_dir() + "/examples/" + arch + "-tiny-synth.pbtxt" +
                      " --set model.init_from=" + hf + " --set model.vocab_size=16 --set train.steps=2" +
                      " --set optimizer.warmup_steps=1" + " --set data.train=" + dir.file("data/train.bin") +
                      " --set data.val= --set logging.run_dir=" + dir.file(arch + "_cli"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("initial weights from Hugging Face"), std::string::npos) << r.output;
  }
  // GPT-2 to an llm.c model file and back, fp32: the same weights; bf16: rounded once.
  const std::string run = dir.file("gpt2_run");
  auto r = run_topotrain("export --checkpoint " + run + " --format llmc --out " + dir.file("llmc"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(all_params(dir.file("llmc/model.bin")), all_params(run));
  r = run_topotrain("export --checkpoint " + run + " --format llmc --dtype bf16 --out " + dir.file("llmc_bf16"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trained = all_params(run), bf16 = all_params(dir.file("llmc_bf16/model.bin"));
  for (size_t i = 0; i < trained.size(); ++i) ASSERT_EQ(bf16[i], bf16_to_f32(f32_to_bf16(trained[i]))) << i;
  // A Llama has no llm.c format: refused, nothing written.
  r = run_topotrain("export --checkpoint " + dir.file("llama_run") + " --format llmc --out " + dir.file("nope"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("nope")));
  // Shards with an index above --max-shard-size; the run's tokenizer (the synthetic alphabet) has no
  // Hugging Face form and is said so.
  r = run_topotrain("export --checkpoint " + run + " --format hf --dtype bf16 --max-shard-size 20K --out " +
                    dir.file("sharded"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir.file("sharded/model.safetensors.index.json")));
  EXPECT_NE(r.output.find("tokenizer: none written"), std::string::npos) << r.output;
}

// transformers loads what `export` writes and computes the loss `eval` reports.
TEST(ExportCli, TransformersLoadsTheExport) {
  if (!have_fixtures()) GTEST_SKIP() << "tests/fixtures/models not present";
  if (test::run_command("python3 -c 'import torch, transformers' 2>/dev/null").exit_code != 0)
    GTEST_SKIP() << "python3 with torch and transformers is not installed (pip install torch transformers)";
  test::TempDir dir;
  for (const std::string name : {"gpt2-tiny", "llama-bf16-shards"}) {
    const std::string out = dir.file(name);
    auto r = run_topotrain("export --checkpoint " + fixture(name) + " --format hf --max-shard-size 50K --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const double ours = eval_json(out)["loss"];
    const std::string script = dir.file("load.py");
    std::ofstream(script)
        << "import struct, sys, torch\n"
           "from transformers import AutoModelForCausalLM\n"
           "m = AutoModelForCausalLM.from_pretrained(sys.argv[1], attn_implementation='eager').float()\n"
           "d = open(sys.argv[2], 'rb').read()\n"
           "n = struct.unpack('<3i', d[:12])[2]\n"
           "ids = list(struct.unpack(f'<{n}H', d[1024:1024 + 2 * n]))\n"
           "B, T, L = 2, 12, []\n"
           "with torch.no_grad():\n"
           "    for b in range(3):\n"
           "        x = torch.tensor(ids[b * B * T:(b + 1) * B * T + 1])\n"
           "        lg = m(input_ids=x[:-1].view(B, T)).logits\n"
           "        L.append(float(torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]),"
           " x[1:].reshape(-1))))\n"
           "print('LOSS', sum(L) / len(L))\n";
    const auto py = test::run_command("python3 " + script + " " + out + " " + fixture("eval_tokens.bin") + " 2>&1");
    ASSERT_EQ(py.exit_code, 0) << py.output;
    const double theirs = std::stod(py.output.substr(py.output.rfind("LOSS ") + 5));
    EXPECT_NEAR(ours, theirs, 1e-5 * theirs) << name;
  }
}

// Runs `args`, expects exit code 4 and every one of `needles` in the output.
void expect_checkpoint_error(const std::string& args, const std::vector<std::string>& needles) {
  const auto r = run_topotrain(args);
  EXPECT_EQ(r.exit_code, 4) << args << "\n" << r.output;
  for (const auto& n : needles) EXPECT_NE(r.output.find(n), std::string::npos) << "'" << n << "' in\n" << r.output;
}

// Rewrites a safetensors header with `edit` (data bytes unchanged).
void edit_header(const std::string& path, const std::function<void(json&)>& edit) {
  std::ifstream in(path, std::ios::binary);
  uint64_t len = 0;
  in.read(reinterpret_cast<char*>(&len), 8);
  std::string header(len, '\0');
  in.read(header.data(), std::streamsize(len));
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json h = json::parse(header);
  edit(h);
  const std::string text = h.dump();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const uint64_t n = text.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << text << data;
}

TEST(WeightsCli, BadInputExits4NamingFileAndTensorAndWritesNothing) {
  if (!have_fixtures()) GTEST_SKIP() << "tests/fixtures/models not present";
  test::TempDir dir;
  auto copy = [&](const std::string& from, const std::string& to) {
    fs::copy(fixture(from), dir.file(to), fs::copy_options::recursive);
    return dir.file(to);
  };
  const std::string eval = " --data " + fixture("eval_tokens.bin") + " --batch-size 2 --seq-len 12";
  fs::create_directories(dir.file("empty"));
  expect_checkpoint_error("eval --model " + dir.file("empty") + eval, {"config.json", dir.file("empty")});

  const std::string bert = copy("gpt2-tiny", "bert");
  std::string cfg = test::read_file(bert + "/config.json");
  cfg.replace(cfg.find("\"gpt2\""), 6, "\"bert\"");
  std::ofstream(bert + "/config.json") << cfg;
  expect_checkpoint_error("eval --model " + bert + eval, {"architecture \"bert\"", "config.json"});

  const std::string shards = copy("llama-bf16-shards", "shards");
  for (const auto& f : fs::directory_iterator(shards))
    if (f.path().filename().string().rfind("model-00001-of-", 0) == 0) fs::remove(f.path());
  expect_checkpoint_error("eval --model " + shards + eval, {"model-00001-of-", "is missing", "index.json"});

  const std::string ints = copy("llama-gqa-tiny", "ints");
  edit_header(ints + "/model.safetensors",
              [](json& h) { h["model.layers.1.self_attn.o_proj.weight"]["dtype"] = "I32"; });
  expect_checkpoint_error("eval --model " + ints + eval,
                          {"model.layers.1.self_attn.o_proj.weight", "I32", "F32, BF16 and F16"});

  const std::string overlap = copy("llama-gqa-tiny", "overlap");
  edit_header(overlap + "/model.safetensors", [](json& h) {
    const auto first = h["model.norm.weight"]["data_offsets"][0].get<uint64_t>();
    h["model.norm.weight"]["data_offsets"] = {first - 8, first - 8 + 32 * 4};
  });
  expect_checkpoint_error("eval --model " + overlap + eval, {"overlap", "model.safetensors"});

  const std::string cut = copy("llama-gqa-tiny", "cut");
  fs::resize_file(cut + "/model.safetensors", fs::file_size(cut + "/model.safetensors") / 2);
  expect_checkpoint_error("eval --model " + cut + eval, {"run past", "(tensor '"});

  // NaN weights (written through the writer, so only the values are wrong): named at load time, and
  // neither a run nor an export leaves anything behind.
  const ModelDesc d = llama_desc(1, 2, 2, 16, 100, 16, 24);
  std::vector<float> p(size_t(model_num_params(d)), 0.01f);
  p[size_t(model_layout(d).find("model.layers.0.self_attn.k_proj.weight").offset + 3)] = INFINITY;
  write_hf_checkpoint(
      dir.file("inf"), d, [&](int64_t b, int64_t n, float* out) { std::copy_n(p.data() + b, n, out); }, DType::kF32,
      1 << 30);
  expect_checkpoint_error("eval --model " + dir.file("inf") + eval, {"model.layers.0.self_attn.k_proj.weight", "inf"});
  expect_checkpoint_error("export --checkpoint " + dir.file("inf") + " --format hf --out " + dir.file("inf_out"),
                          {"k_proj"});
  EXPECT_FALSE(fs::exists(dir.file("inf_out")));
  expect_checkpoint_error("train --config " + test::source_dir() + "/examples/llama-tiny-synth.pbtxt" +
                              " --set model.init_from=" + dir.file("inf") +
                              " --set model.n_layer=0 --set model.n_head=0 --set model.n_kv_head=0 --set model.n_embd=0"
                              " --set model.mlp_hidden=0 --set model.vocab_size=0 --set model.max_seq_len=0"
                              " --set train.seq_len=16 --set data.train=" +
                              fixture("eval_tokens.bin") +
                              " --set data.val= --set logging.run_dir=" + dir.file("inf_run"),
                          {"k_proj"});
  EXPECT_FALSE(fs::exists(dir.file("inf_run/checkpoints")));
}

TEST(WeightsCli, ConfigFieldThatDisagreesWithTheWeightsNamesBothValues) {
  if (!have_fixtures()) GTEST_SKIP() << "tests/fixtures/models not present";
  const auto r = run_topotrain("train --config " + test::source_dir() + "/examples/gpt2-tiny-synth.pbtxt" +
                               " --set model.init_from=" + fixture("llama-gqa-tiny"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model.arch is gpt2 in the config but llama in"), std::string::npos) << r.output;
}

// Loading is tensor by tensor: a ~0.9 GB bf16 model (439M parameters) peaks at its fp32 size plus one
// tensor, not plus the mapped file.
TEST(WeightsCli, LoadingPeaksAtFp32SizePlusOneTensor) {
  test::TempDir dir;
  const ModelDesc d = llama_desc(8, 16, 16, 2048, 8192, 64, 5504);
  const ModelLayout layout = model_layout(d);
  write_hf_checkpoint(
      dir.file("big"), d,
      [](int64_t b, int64_t n, float* out) {
        for (int64_t i = 0; i < n; ++i) out[i] = float((b + i) % 97) * 1e-3f;
      },
      DType::kBF16, uint64_t(2) << 30);
  int64_t largest = 0;
  for (const ParamInfo& p : layout.tensors) largest = std::max(largest, shape_numel(p.shape));
  auto peak_of = [&](const std::string& model) {
    const auto r = run_topotrain("eval --model " + model + " --data " + fixture("eval_tokens.bin") +
                                 " --batch-size 1 --seq-len 8 --batches 1 --json");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return json::parse(r.output.substr(r.output.rfind("{\"batch")))["peak_rss_bytes"].get<double>();
  };
  const double base = peak_of(fixture("gpt2-tiny"));  // the binary, its libraries, a tiny model
  const double peak = peak_of(dir.file("big"));
  const double fp32 = 4.0 * double(layout.numel), file = 2.0 * double(layout.numel);
  std::printf(
      "peak RSS %.0f MB (a tiny model: %.0f MB): fp32 model %.0f MB, largest tensor %.0f MB, bf16 file %.0f MB\n",
      peak / 1e6, base / 1e6, fp32 / 1e6, 4.0 * double(largest) / 1e6, file / 1e6);
  // 100 MB for activations and allocator slack; holding the mapped file would add 877 MB.
  EXPECT_LT(peak, base + fp32 + 4.0 * double(largest) + 100e6);
}

}  // namespace
}  // namespace tt
