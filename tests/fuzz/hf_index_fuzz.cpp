// Fuzz target: model.safetensors.index.json (core/model/hf_checkpoint.h open_hf_checkpoint): the
// directory holds the committed bf16 Llama in 4 shards (tests/fixtures/models/llama-bf16-shards,
// config.json and shards) and the input as the index; a model that opens is read whole.
#include <cstdint>
#include <limits>
#include <string_view>

#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  tt::fuzz::fuzz_hf_model_file("llama-bf16-shards",
                               {"config.json", "model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                                "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors"},
                               "model.safetensors.index.json",
                               std::string_view(reinterpret_cast<const char*>(data), size),
                               std::numeric_limits<int64_t>::max());
  return 0;
}
