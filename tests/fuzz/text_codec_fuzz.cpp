// Fuzz target: a checkpoint's tokenizer section (data/text_codec.h TextCodec::parse: "none",
// "chars:<alphabet>", "bpe:<len>\n<encoder.json><vocab.bpe>"), then the codec used both ways.
// Oracle: a codec that loads decodes what it encodes back to the same text.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/text_codec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  tt::fuzz::expect_only_tt_errors([&] {
    const tt::TextCodec codec = tt::TextCodec::parse(spec);
    (void)codec.describe();
    (void)codec.decode({0, 1, 2, 3});
    if (!codec.has_text()) return;
    const std::string sample = "the 1st sample, with spaces\nand a newline";
    std::vector<int32_t> ids;
    try {
      ids = codec.encode(sample);
    } catch (const tt::Error&) {
      return;  // a character alphabet without these characters
    }
    if (codec.decode(ids) != sample) {
      std::fprintf(stderr, "FINDING: decode(encode(x)) != x for a loaded codec\n");
      std::abort();
    }
  });
  return 0;
}
