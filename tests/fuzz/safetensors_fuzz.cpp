// Fuzz target: safetensors files (core/safetensors.h SafetensorsFile): the header length, the JSON
// header, dtypes, shapes against byte spans; then every readable tensor read as fp32.
#include <algorithm>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      tt::fuzz::write_scratch_file("model.safetensors", std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] {
    tt::SafetensorsFile file(path);
    (void)file.metadata().size();
    std::vector<float> out;
    for (const std::string& name : file.names()) {
      const tt::SafetensorInfo& info = file.info(name);
      if (!info.readable) continue;
      // A validated tensor fits in the file, so numel is bounded by the input size.
      const int64_t n = std::min<int64_t>(info.numel(), int64_t(size));
      out.resize(size_t(std::max<int64_t>(n, 0)));
      if (n > 0) file.read_f32(name, 0, n, out.data());
      file.release(name);
    }
  });
  return 0;
}
