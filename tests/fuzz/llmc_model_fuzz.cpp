// Fuzz target: llm.c model files (core/model/llmc_model.h open_llmc_model): the 256-int header
// against the file size; a model that opens is read (its first 64K parameters).
#include <algorithm>
#include <string>
#include <vector>

#include "core/model/llmc_model.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  const std::string path =
      tt::fuzz::write_scratch_file("model.bin", std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] {
    (void)tt::is_llmc_model_file(path);
    std::unique_ptr<tt::WeightSource> source = tt::open_llmc_model(path);
    const int64_t n = std::min<int64_t>(source->layout().numel, int64_t(1) << 16);
    std::vector<float> out(size_t(std::max<int64_t>(n, 0)));
    if (n > 0) source->read(0, n, out.data());
  });
  return 0;
}
