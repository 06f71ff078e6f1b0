// Fuzz target: the BPE encoder on arbitrary bytes (data/bpe_tokenizer.h encode/decode) with the
// committed small vocabulary tests/fuzz/vocab (400 tokens trained by `topotrain data
// train-tokenizer` on README.md; TT_FUZZ_TOKENIZER=DIR picks another, e.g. GPT-2's). Oracles:
// decode(encode(x)) == x (bpe_roundtrip_check.h), and the split TextEncoder::chunkable promises
// (data/encode.h): encode(a + b) == encode(a) ++ encode(b) when a ends in "X\n" and b starts with
// "Y", X and Y printable ASCII other than space.
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "data/bpe_tokenizer.h"
#include "tests/fuzz/bpe_roundtrip_check.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const tt::data::BpeTokenizer& tokenizer() {
  static const tt::data::BpeTokenizer tok = [] {
    const char* dir = std::getenv("TT_FUZZ_TOKENIZER");
    return tt::data::BpeTokenizer::load(dir && *dir ? dir : tt::fuzz::source_dir() + "/tests/fuzz/vocab");
  }();
  return tok;
}

bool printable_not_space(char c) { return c > ' ' && c <= '~'; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const tt::data::BpeTokenizer& tok = tokenizer();
  tt::fuzz::check_bpe_roundtrip(tok, text);
  // The first safe cut point ("X\nY"), if any.
  for (size_t i = 1; i + 1 < size; ++i) {
    if (text[i] != '\n' || !printable_not_space(text[i - 1]) || !printable_not_space(text[i + 1])) continue;
    std::vector<uint32_t> pieces = tok.encode(text.substr(0, i + 1));
    tok.encode(text.substr(i + 1), pieces);
    if (pieces != tok.encode(text)) {
      std::fprintf(stderr, "FINDING: encoding across a safe cut point (byte %zu) differs from the whole\n", i + 1);
      std::abort();
    }
    break;
  }
  return 0;
}
