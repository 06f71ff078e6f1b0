// Fuzz target: a Hugging Face model directory's config.json (core/model/hf_checkpoint.h
// open_hf_checkpoint). The directory holds the committed tiny GPT-2's model.safetensors
// (tests/fixtures/models/gpt2-tiny) and the input as config.json; a model that opens is read.
#include <algorithm>
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/model/hf_checkpoint.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const std::string& model_dir() {
  static const std::string dir = [] {
    const std::string d = tt::fuzz::scratch_dir() + "/hf_config";
    tt::ensure_dir(d);
    tt::fuzz::write_scratch_file(
        "hf_config/model.safetensors",
        tt::read_file_to_string(tt::fuzz::source_dir() + "/tests/fixtures/models/gpt2-tiny/model.safetensors"));
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  const std::string& dir = model_dir();
  tt::fuzz::write_scratch_file("hf_config/config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] {
    std::unique_ptr<tt::WeightSource> source = tt::open_hf_checkpoint(dir);
    (void)source->describe();
    const int64_t n = std::min<int64_t>(source->layout().numel, int64_t(1) << 16);
    std::vector<float> out(size_t(std::max<int64_t>(n, 0)));
    if (n > 0) source->read(0, n, out.data());
  });
  return 0;
}
