// Fuzz target: a Hugging Face model directory's config.json (core/model/hf_checkpoint.h
// open_hf_checkpoint). The directory holds the committed tiny GPT-2's model.safetensors
// (tests/fixtures/models/gpt2-tiny) and the input as config.json; a model that opens is read.
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  tt::fuzz::fuzz_hf_model_file("gpt2-tiny", {"model.safetensors"}, "config.json",
                               std::string_view(reinterpret_cast<const char*>(data), size), int64_t(1) << 16);
  return 0;
}
