// Fuzz target: the JSON manifests beside shards: manifest.json of `data encode`
// (data/encode.h read_encode_manifest) and synth.json of `data synth` (data/synth.h
// read_synth_manifest), read from the same bytes.
#include <string>

#include "data/encode.h"
#include "data/synth.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      tt::fuzz::write_scratch_file("manifest.json", std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] { tt::data::read_encode_manifest(path); });
  tt::fuzz::expect_only_tt_errors([&] { tt::data::read_synth_manifest(path); });
  return 0;
}
