// Parity with Hugging Face transformers: small random GPT-2 and Llama (GQA, Llama 3.1 RoPE scaling)
// models made and run by transformers (tests/fixtures/models/make_hf_fixtures.py, which wrote the
// committed fixtures) load into topotrain's Model and give the same logits and loss in fp32, to 1e-5
// relative. The weights come in through a test-only safetensors reader and the families' name maps
// (GPT-2's Conv1D weights are stored [in, out] and are transposed); the real import is the weights
// layer's job.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct HfTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// fp32 tensors of a .safetensors file: u64 header length, JSON header, raw little-endian data.
std::map<std::string, HfTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  std::string header(header_len, '\0');
  in.read(header.data(), std::streamsize(header_len));
  const json h = json::parse(header);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, HfTensor> out;
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(t["dtype"], "F32") << name;
    HfTensor x;
    x.shape = t["shape"].get<std::vector<int64_t>>();
    const auto off = t["data_offsets"].get<std::vector<size_t>>();
    x.data.resize((off[1] - off[0]) / 4);
    std::memcpy(x.data.data(), bytes.data() + off[0], off[1] - off[0]);
    out[name] = std::move(x);
  }
  return out;
}

ModelDesc desc_of(const json& c) {
  const std::string type = c["model_type"];
  if (type == "gpt2") return gpt2_desc(c["n_layer"], c["n_head"], c["n_embd"], c["vocab_size"], c["n_positions"]);
  // transformers 5 keeps the RoPE settings in rope_parameters, earlier versions in rope_theta and
  // rope_scaling.
  const json rope = c.contains("rope_parameters")                                ? c["rope_parameters"]
                    : c.contains("rope_scaling") && !c["rope_scaling"].is_null() ? c["rope_scaling"]
                                                                                 : json::object();
  const float theta = rope.contains("rope_theta") ? rope["rope_theta"].get<float>() : c["rope_theta"].get<float>();
  ModelDesc d = llama_desc(c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"],
                           c["vocab_size"], c["max_position_embeddings"], c["intermediate_size"], theta);
  d.norm.eps = c["rms_norm_eps"];
  if (rope.value("rope_type", "default") == "llama3") {
    d.rope.scaling_factor = rope["factor"];
    d.rope.low_freq_factor = rope["low_freq_factor"];
    d.rope.high_freq_factor = rope["high_freq_factor"];
    d.rope.original_max_seq_len = rope["original_max_position_embeddings"];
  }
  return d;
}

// Copies every tensor of the model's layout from the Hugging Face state dict into params.
void load(const ModelDesc& d, const ModelLayout& layout, const std::map<std::string, HfTensor>& hf, float* params) {
  const bool gpt2 = d.arch == "gpt2";
  for (const ParamInfo& p : layout.tensors) {
    const std::string name = gpt2 && p.name != "lm_head.weight" ? "transformer." + p.name : p.name;
    auto it = hf.find(name);
    ASSERT_NE(it, hf.end()) << "no tensor " << name << " in the fixture";
    const HfTensor& t = it->second;
    float* dst = params + p.offset;
    // GPT-2's Conv1D layers store their weights [in, out]: transposed to [out, in].
    const bool conv1d = gpt2 && p.shape.size() == 2 && name.find(".h.") != std::string::npos;
    if (conv1d) {
      ASSERT_EQ(t.shape, (std::vector<int64_t>{p.shape[1], p.shape[0]})) << name;
      for (int64_t r = 0; r < p.shape[0]; ++r)
        for (int64_t c = 0; c < p.shape[1]; ++c) dst[r * p.shape[1] + c] = t.data[size_t(c * p.shape[0] + r)];
      continue;
    }
    // Vocabulary tables: the real rows, padding rows stay zero.
    ASSERT_LE(int64_t(t.data.size()), shape_numel(p.shape)) << name;
    ASSERT_EQ(t.shape.back(), p.shape.back()) << name;
    std::copy(t.data.begin(), t.data.end(), dst);
  }
}

void expect_parity(const std::string& name) {
  const std::string dir = test::source_dir() + "/tests/fixtures/models/" + name;
  if (!fs::exists(dir + "/case.json")) GTEST_SKIP() << dir << " not present (make_hf_fixtures.py writes it)";
  const json config = json::parse(test::read_file(dir + "/config.json"));
  const json c = json::parse(test::read_file(dir + "/case.json"));
  const ModelDesc desc = desc_of(config);
  const int B = c["batch"], T = c["seq_len"];
  ModelOptions opts;
  opts.max_batch = B;
  opts.max_seq = T;
  Model model(desc, opts);
  load(desc, model.layout(), read_safetensors(dir + "/model.safetensors"), model.params().data<float>());
  const auto inputs = c["inputs"].get<std::vector<int32_t>>(), targets = c["targets"].get<std::vector<int32_t>>();
  model.forward(inputs.data(), targets.data(), B, T);
  const double loss = model.take_loss_sum(), want_loss = c["loss"];
  EXPECT_NEAR(loss, want_loss, 1e-5 * want_loss) << desc.str();

  const auto want = c["logits"].get<std::vector<float>>();
  const int V = desc.vocab_size;
  ASSERT_EQ(want.size(), size_t(B) * T * V);
  model.forward(inputs.data(), nullptr, B, T);
  double max_err = 0, max_ref = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const std::vector<float> got = model.logits_at(b, t);
      for (int v = 0; v < V; ++v) {
        const double ref = want[(size_t(b) * T + t) * V + v];
        max_err = std::max(max_err, std::fabs(got[size_t(v)] - ref));
        max_ref = std::max(max_ref, std::fabs(ref));
      }
    }
  EXPECT_GT(max_ref, 0.5) << "the fixture's logits should be far from zero";
  EXPECT_LE(max_err, 1e-5 * max_ref) << desc.str() << ": max |logit error| " << max_err << " of max |logit| "
                                     << max_ref;
  std::printf("%s: loss %.7f vs %.7f, max logit error %.2e (of %.3f)\n", name.c_str(), loss, want_loss, max_err,
              max_ref);
}

TEST(HuggingFaceParity, Gpt2LogitsAndLossMatchTransformers) { expect_parity("gpt2-tiny"); }

TEST(HuggingFaceParity, LlamaGqaLogitsAndLossMatchTransformers) { expect_parity("llama-gqa-tiny"); }

}  // namespace
}  // namespace tt
