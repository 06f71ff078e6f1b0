// Fuzz target: the checkpoint container (core/checkpoint_io.h): structure and checksums, read three
// ways (whole, verify-only streaming, sections left in the file and read by range).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/checkpoint_io.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  const std::string path =
      tt::fuzz::write_scratch_file("step_00000001.ckpt", std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] {
    tt::CheckpointReader reader(path);
    for (const std::string& name : reader.names()) (void)reader.bytes(name).size();
  });
  tt::fuzz::expect_only_tt_errors([&] { tt::verify_checkpoint(path); });
  tt::fuzz::expect_only_tt_errors([&] {
    tt::CheckpointReader reader(path, [](const std::string&) { return false; });
    for (const std::string& name : reader.names()) {
      const uint64_t bytes = reader.section_bytes(name);
      if (bytes > size) continue;  // the reader checked it against the file; do not trust the harness
      std::vector<char> buf(bytes + 1);
      reader.read_range(name, 0, buf.data(), bytes);
      bool refused = false;
      try {
        reader.read_range(name, bytes, buf.data(), 1);  // one byte past the end
      } catch (const tt::Error&) {
        refused = true;
      }
      if (!refused) {
        std::fprintf(stderr, "FINDING: read_range past the end of section '%s' was not refused\n", name.c_str());
        std::abort();
      }
    }
  });
  tt::fuzz::expect_only_tt_errors([&] { tt::newest_complete_checkpoint(tt::fuzz::scratch_dir()); });
  return 0;
}
