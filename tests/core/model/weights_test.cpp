// Weights in and out of the model layer: Hugging Face directories and llm.c model files round-trip
// every parameter bit for bit (fp32) or rounded once (bf16), in one file or shards; the committed
// transformers fixtures (save_pretrained's GPT-2, the published GPT-2 layout with its mask
// buffers, a GQA Llama, a bf16 Llama in shards) load and give transformers' loss; and damaged or
// foreign input is a kCheckpoint error naming the file and tensor.
#include "core/model/weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/hf_checkpoint.h"
#include "core/model/init_weights.h"
#include "core/model/llmc_model.h"
#include "core/model/model.h"
#include "core/rng.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fixture(const std::string& name) { return test::source_dir() + "/tests/fixtures/models/" + name; }

// Every element of the source's flat buffer.
std::vector<float> all_params(WeightSource& s) {
  std::vector<float> out(size_t(s.layout().numel));
  s.read(0, s.layout().numel, out.data());
  return out;
}

// Distinct values for every element (padding rows zero, as the model keeps them).
std::vector<float> pattern(const ModelDesc& d) {
  const ModelLayout layout = model_layout(d);
  std::vector<float> p(size_t(layout.numel));
  init_weights(d, layout, 99, 0, layout.numel, p.data());
  for (size_t i = 0; i < p.size(); ++i) p[i] += p[i] != 0.0f ? float(i % 7) * 1e-3f : 0.0f;  // norms not all 1
  return p;
}

std::function<void(int64_t, int64_t, float*)> from(const std::vector<float>& p) {
  return [&p](int64_t begin, int64_t count, float* out) { std::memcpy(out, p.data() + begin, size_t(count) * 4); };
}

// The loss `eval` reports: llm.c's order over eval_tokens.bin (llm.c uint16 shard), fp32 on the CPU.
double eval_loss(WeightSource& source, int B, int T, int batches) {
  std::ifstream f(fixture("eval_tokens.bin"), std::ios::binary);
  int32_t header[256];
  f.read(reinterpret_cast<char*>(header), sizeof header);
  std::vector<uint16_t> ids(static_cast<size_t>(header[2]));
  f.read(reinterpret_cast<char*>(ids.data()), std::streamsize(ids.size() * 2));
  ModelOptions mo;
  mo.max_batch = B;
  mo.max_seq = T;
  mo.hold_grads = false;
  Model model(source.desc(), mo);
  source.read(0, model.num_params(), model.params().data<float>());
  double sum = 0;
  std::vector<int32_t> in(size_t(B) * T), tg(in.size());
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < B * T; ++i) {
      in[size_t(i)] = ids[size_t(b * B * T + i)];
      tg[size_t(i)] = ids[size_t(b * B * T + i + 1)];
    }
    model.forward(in.data(), tg.data(), B, T);
    sum += model.take_loss_sum();
  }
  return sum / batches;
}

std::string error_of(const std::function<void()>& f, ErrorKind kind = ErrorKind::kCheckpoint) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Weights, TransformersFixturesLoadAndGiveTransformersLoss) {
  for (const char* name : {"gpt2-tiny", "gpt2-published", "llama-gqa-tiny", "llama-bf16-shards"}) {
    SCOPED_TRACE(name);
    if (!fs::exists(fixture(name) + "/case.json")) GTEST_SKIP() << fixture(name) << " not present";
    const json c = json::parse(test::read_file(fixture(name) + "/case.json"));
    const auto source = open_weights(fixture(name));
    EXPECT_EQ(source->format(), WeightFormat::kHuggingFace);
    const json& e = c["eval"];
    const double loss = eval_loss(*source, e["batch"], e["seq_len"], e["batches"]), want = e["loss"];
    EXPECT_NEAR(loss, want, 1e-5 * want) << source->describe();
  }
  // The published layout and save_pretrained's are the same weights.
  const auto a = open_weights(fixture("gpt2-tiny")), b = open_weights(fixture("gpt2-published"));
  EXPECT_EQ(all_params(*a), all_params(*b));
  EXPECT_NE(open_weights(fixture("llama-bf16-shards"))->describe().find("BF16"), std::string::npos);
}

TEST(Weights, HuggingFaceRoundTripIsBitExactInFp32AndRoundedOnceInBf16) {
  test::TempDir dir;
  for (const ModelDesc& d : {gpt2_desc(2, 2, 16, 50, 8), llama_desc(2, 4, 2, 32, 50, 8, 48)}) {
    SCOPED_TRACE(d.str());
    const std::vector<float> p = pattern(d);
    const std::string one = dir.file(d.arch + "_fp32"), shards = dir.file(d.arch + "_bf16");
    write_hf_checkpoint(one, d, from(p), DType::kF32, uint64_t(1) << 30);
    EXPECT_TRUE(fs::exists(one + "/model.safetensors"));
    const auto back = open_weights(one);
    EXPECT_EQ(back->desc().str(), d.str());
    EXPECT_EQ(all_params(*back), p);
    write_hf_checkpoint(shards, d, from(p), DType::kBF16, 4000);  // several shards, an index
    EXPECT_TRUE(fs::exists(shards + "/model.safetensors.index.json"));
    int files = 0;
    for (const auto& entry : fs::directory_iterator(shards)) files += entry.path().extension() == ".safetensors";
    EXPECT_GT(files, 2);
    const std::vector<float> bf = all_params(*open_weights(shards));
    for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(bf[i], bf16_to_f32(f32_to_bf16(p[i]))) << i;
  }
  // A description with no Hugging Face architecture is refused before anything is written.
  ModelDesc odd = gpt2_desc(1, 2, 16, 50, 8);
  odd.norm.kind = ops::NormKind::kRMSNorm;
  EXPECT_EQ(hf_architecture(odd), "");
  error_of([&] { write_hf_checkpoint(dir.file("odd"), odd, from(pattern(odd)), DType::kF32, 1 << 30); },
           ErrorKind::kConfig);
  EXPECT_FALSE(fs::exists(dir.file("odd")));
}

TEST(Weights, LlmcModelFileRoundTripAndLayout) {
  test::TempDir dir;
  const ModelDesc d = gpt2_desc(2, 2, 16, 50, 8);
  const std::vector<float> p = pattern(d);
  write_llmc_model(dir.file("m.bin"), d, from(p), DType::kF32);
  EXPECT_TRUE(is_llmc_model_file(dir.file("m.bin")));
  const auto back = open_weights(dir.file("m.bin"));
  EXPECT_EQ(back->format(), WeightFormat::kLlmc);
  EXPECT_EQ(back->desc().str(), d.str());
  EXPECT_EQ(all_params(*back), p);
  // llm.c's order: after wte and wpe come the L ln_1 weights, then the L ln_1 biases, ...
  std::ifstream f(dir.file("m.bin"), std::ios::binary);
  std::vector<int32_t> header(256);
  f.read(reinterpret_cast<char*>(header.data()), 1024);
  EXPECT_EQ(std::vector<int32_t>(header.begin(), header.begin() + 8),
            (std::vector<int32_t>{20240326, 3, 8, 50, 2, 2, 16, 128}));
  const ModelLayout layout = model_layout(d);
  std::vector<float> body(p.size());
  f.read(reinterpret_cast<char*>(body.data()), std::streamsize(body.size() * 4));
  const int64_t ln1_of_block1 = 128 * 16 + 8 * 16 + 16;  // wte, wpe, block 0's ln_1.weight
  EXPECT_EQ(body[size_t(ln1_of_block1)], p[size_t(layout.find("h.1.ln_1.weight").offset)]);
  EXPECT_EQ(body.back(), p[size_t(layout.find("ln_f.bias").offset + 15)]);

  write_llmc_model(dir.file("bf16.bin"), d, from(p), DType::kBF16);
  const std::vector<float> bf = all_params(*open_weights(dir.file("bf16.bin")));
  for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(bf[i], bf16_to_f32(f32_to_bf16(p[i]))) << i;
  error_of([&] { write_llmc_model(dir.file("llama.bin"), llama_desc(1, 2, 2, 16, 50, 8), from(p), DType::kF32); },
           ErrorKind::kConfig);
}

// Copies a fixture directory, then lets `damage` change it.
std::string damaged(const test::TempDir& dir, const std::string& name, const std::string& from_fixture,
                    const std::function<void(const std::string&)>& damage) {
  const std::string out = dir.file(name);
  fs::copy(fixture(from_fixture), out, fs::copy_options::recursive);
  damage(out);
  return out;
}

TEST(Weights, DamagedOrForeignInputNamesTheFileAndTensor) {
  if (!fs::exists(fixture("llama-bf16-shards/case.json"))) GTEST_SKIP() << "fixtures not present";
  test::TempDir dir;
  std::string e = error_of([&] { open_weights(dir.path()); });
  EXPECT_NE(e.find("no config.json"), std::string::npos) << e;

  const std::string bert = damaged(dir, "bert", "gpt2-tiny", [](const std::string& d) {
    json c = json::parse(test::read_file(d + "/config.json"));
    c["model_type"] = "bert";
    std::ofstream(d + "/config.json") << c.dump();
  });
  e = error_of([&] { open_weights(bert); });
  EXPECT_NE(e.find("architecture \"bert\""), std::string::npos) << e;
  EXPECT_NE(e.find("config.json"), std::string::npos) << e;

  const std::string no_shard = damaged(dir, "no_shard", "llama-bf16-shards", [](const std::string& d) {
    fs::remove(d + "/model-00002-of-" + [&] {
      for (const auto& f : fs::directory_iterator(d)) {
        const std::string n = f.path().filename().string();
        if (n.rfind("model-00001-of-", 0) == 0) return n.substr(15, 5);
      }
      return std::string("?");
    }() + ".safetensors");
  });
  e = error_of([&] { open_weights(no_shard); });
  EXPECT_NE(e.find("is missing"), std::string::npos) << e;
  EXPECT_NE(e.find("model.safetensors.index.json"), std::string::npos) << e;

  const std::string cut = damaged(dir, "cut", "llama-gqa-tiny", [](const std::string& d) {
    fs::resize_file(d + "/model.safetensors", fs::file_size(d + "/model.safetensors") - 100);
  });
  e = error_of([&] { open_weights(cut); });
  EXPECT_NE(e.find("run past"), std::string::npos) << e;
  EXPECT_NE(e.find("model.safetensors (tensor '"), std::string::npos) << e;

  // Found by tests/fuzz (hf_config, hf_index): fields of the wrong type or out of int's range, and a
  // weight_map entry that is not a file name, are damage named in config.json / the index, not a
  // JSON library exception or an undefined float-to-int conversion.
  for (const auto& field : std::vector<std::pair<std::string, json>>{{"num_hidden_layers", 1e300},
                                                                     {"num_attention_heads", 2.5},
                                                                     {"model_type", 5},
                                                                     {"hidden_act", json::array()},
                                                                     {"rms_norm_eps", "x"},
                                                                     {"head_dim", -1e20}}) {
    const std::string& name = field.first;
    const json& value = field.second;
    const std::string bad = damaged(dir, "type_" + name, "llama-gqa-tiny", [&](const std::string& d) {
      json c = json::parse(test::read_file(d + "/config.json"));
      c[name] = value;
      std::ofstream(d + "/config.json") << c.dump();
    });
    e = error_of([&] { open_weights(bad); });
    EXPECT_NE(e.find(name), std::string::npos) << name << ": " << e;
    EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  }
  const std::string bad_index = damaged(dir, "bad_index", "llama-bf16-shards", [](const std::string& d) {
    json j = json::parse(test::read_file(d + "/model.safetensors.index.json"));
    j["weight_map"]["model.norm.weight"] = 7;
    std::ofstream(d + "/model.safetensors.index.json") << j.dump();
  });
  e = error_of([&] { open_weights(bad_index); });
  EXPECT_NE(e.find("model.norm.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("not a file name"), std::string::npos) << e;

  // A shard named by a path would be read from outside the model's directory (a file planted next
  // to it, or anything the user may read): only plain file names beside the index are accepted.
  for (const std::string& shard : {"../outside.safetensors", "sub/model.safetensors", ".."}) {
    const std::string escaping = damaged(dir, "escaping", "llama-bf16-shards", [&](const std::string& d) {
      json j = json::parse(test::read_file(d + "/model.safetensors.index.json"));
      j["weight_map"]["model.norm.weight"] = shard;
      std::ofstream(d + "/model.safetensors.index.json") << j.dump();
      fs::copy_file(d + "/" + j["weight_map"]["model.embed_tokens.weight"].get<std::string>(),
                    d + "/../outside.safetensors", fs::copy_options::overwrite_existing);
    });
    e = error_of([&] { open_weights(escaping); });
    EXPECT_NE(e.find("'" + shard + "', which is not a file name"), std::string::npos) << shard << ": " << e;
    EXPECT_NE(e.find("model.safetensors.index.json"), std::string::npos) << e;
    fs::remove_all(escaping);
  }

  // Sizes past the config's bounds (model_limits) are refused from config.json too, before any
  // size is computed from them.
  for (const auto& field : std::vector<std::pair<std::string, int>>{
           {"vocab_size", 2147483647}, {"hidden_size", 1 << 30}, {"num_hidden_layers", 1 << 21}}) {
    const std::string& name = field.first;
    const int value = field.second;
    const std::string huge = damaged(dir, "huge_" + name, "llama-gqa-tiny", [&](const std::string& d) {
      json c = json::parse(test::read_file(d + "/config.json"));
      c[name] = value;
      std::ofstream(d + "/config.json") << c.dump();
    });
    e = error_of([&] { open_weights(huge); });
    EXPECT_NE(e.find("over the largest supported value"), std::string::npos) << name << ": " << e;
    EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  }

  // NaN weights: the file is fine, the values are not. Written through the writer, so only the
  // value is wrong.
  const ModelDesc d = llama_desc(1, 2, 2, 16, 50, 8, 24);
  std::vector<float> p = pattern(d);
  const ModelLayout layout = model_layout(d);
  p[size_t(layout.find("model.layers.0.mlp.up_proj.weight").offset + 5)] = std::nanf("");
  write_hf_checkpoint(dir.file("nan"), d, from(p), DType::kF32, 1 << 30);
  const auto nan = open_weights(dir.file("nan"));
  e = error_of([&] { all_params(*nan); });
  EXPECT_NE(e.find("model.layers.0.mlp.up_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("element 5 "), std::string::npos) << e;
}

}  // namespace
}  // namespace tt
