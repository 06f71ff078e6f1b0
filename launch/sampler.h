// Autoregressive sampling from a model: temperature, top-k, seeded. Shared by `topotrain sample` and
// the end-of-training sample. Each new token re-runs the model over the last max_seq tokens (no KV
// cache: sampling is a demo path, training is the product).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "data/text_codec.h"

namespace tt {

struct SampleSettings {
  int max_new_tokens = 100;
  float temperature = 1.0f;  // 0 = greedy
  int top_k = 0;             // 0 = all tokens
  uint64_t seed = 1;
  bool stream_to_stdout = false;  // print each token as it is produced
};

// Appends up to max_new_tokens ids to `ids` and returns the new ones. ids must be non-empty.
std::vector<int32_t> sample_tokens(Model& model, std::vector<int32_t> ids, const SampleSettings& s);

// Encodes the prompt (an empty prompt starts from token 0), samples, returns the prompt plus the
// continuation as text.
std::string generate_text(Model& model, const TextCodec& codec, const std::string& prompt, const SampleSettings& s);

}  // namespace tt
