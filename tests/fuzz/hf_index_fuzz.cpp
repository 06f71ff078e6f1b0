// Fuzz target: model.safetensors.index.json (core/model/hf_checkpoint.h open_hf_checkpoint): the
// directory holds the committed bf16 Llama in 4 shards (tests/fixtures/models/llama-bf16-shards,
// config.json and shards) and the input as the index; a model that opens is read whole.
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/model/hf_checkpoint.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const std::string& model_dir() {
  static const std::string dir = [] {
    const std::string d = tt::fuzz::scratch_dir() + "/hf_index";
    const std::string fixture = tt::fuzz::source_dir() + "/tests/fixtures/models/llama-bf16-shards/";
    tt::ensure_dir(d);
    for (const char* name : {"config.json", "model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                             "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors"})
      tt::fuzz::write_scratch_file(std::string("hf_index/") + name, tt::read_file_to_string(fixture + name));
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  const std::string& dir = model_dir();
  tt::fuzz::write_scratch_file("hf_index/model.safetensors.index.json",
                               std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] {
    std::unique_ptr<tt::WeightSource> source = tt::open_hf_checkpoint(dir);
    std::vector<float> out(size_t(source->layout().numel));
    source->read(0, source->layout().numel, out.data());
  });
  return 0;
}
