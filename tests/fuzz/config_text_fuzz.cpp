// Fuzz target: the text-format run configuration (core/config.h parse_config_text: parse, defaults,
// validation). Oracle: a config that loads prints as text that loads back to the same config
// (config.h promises parse_config_text(config_to_text(c)) reproduces c).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tt::fuzz::expect_only_tt_errors([&] {
    const tt::config::Config cfg = tt::parse_config_text(text, "fuzz.pbtxt");
    const std::string printed = tt::config_to_text(cfg);
    const tt::config::Config again = tt::parse_config_text(printed, "fuzz.pbtxt (printed)");
    if (again.SerializeAsString() != cfg.SerializeAsString()) {
      std::fprintf(stderr, "FINDING: config_to_text does not round-trip:\n%s\n", printed.c_str());
      std::abort();
    }
  });
  return 0;
}
