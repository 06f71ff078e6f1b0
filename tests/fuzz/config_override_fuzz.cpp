// Fuzz target: `--set a.b=c` overrides (core/config.h apply_override) on a real config
// (examples/gpt2-tiny-synth.pbtxt), one assignment per input line, then validation. Oracle: a
// rejected assignment leaves the config unchanged, as config.h promises.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/config.h"
#include "core/fs.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const tt::config::Config& base_config() {
  static const tt::config::Config cfg = tt::parse_config_text(
      tt::read_file_to_string(tt::fuzz::source_dir() + "/examples/gpt2-tiny-synth.pbtxt"), "gpt2-tiny-synth.pbtxt");
  return cfg;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::config::Config cfg = base_config();
  for (std::string_view line : tt::fuzz::split_input(data, size, "\n")) {
    const std::string before = cfg.SerializeAsString();
    bool rejected = false;
    tt::fuzz::expect_only_tt_errors([&] {
      try {
        tt::apply_override(cfg, std::string(line), "--set");
      } catch (const tt::Error&) {
        rejected = true;
        throw;
      }
    });
    if (rejected && cfg.SerializeAsString() != before) {
      std::fprintf(stderr, "FINDING: a rejected override changed the config: %.*s\n", int(line.size()), line.data());
      std::abort();
    }
  }
  tt::fuzz::expect_only_tt_errors([&] {
    tt::fill_defaults(cfg);
    tt::validate_config(cfg, "fuzz");
  });
  return 0;
}
