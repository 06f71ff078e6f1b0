// Parity with Hugging Face transformers: small random GPT-2 and Llama (GQA, Llama 3.1 RoPE scaling)
// models made and run by transformers (tests/fixtures/models/make_hf_fixtures.py, which wrote the
// committed fixtures) load into topotrain's Model through the weight import (core/model/weights.h)
// and give the same logits and loss in fp32, to 1e-5 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/weights.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void expect_parity(const std::string& name) {
  const std::string dir = test::source_dir() + "/tests/fixtures/models/" + name;
  if (!fs::exists(dir + "/case.json")) GTEST_SKIP() << dir << " not present (make_hf_fixtures.py writes it)";
  const json c = json::parse(test::read_file(dir + "/case.json"));
  const auto source = open_weights(dir);
  const ModelDesc& desc = source->desc();
  const int B = c["batch"], T = c["seq_len"];
  ModelOptions opts;
  opts.max_batch = B;
  opts.max_seq = T;
  Model model(desc, opts);
  source->read(0, model.num_params(), model.params().data<float>());
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
