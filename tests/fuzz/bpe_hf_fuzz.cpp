// Fuzz target: Hugging Face tokenizer.json (data/bpe_tokenizer.h BpeTokenizer::from_hf_json, and
// BpeTokenizer::load on a file, which is how a model directory's tokenizer.json is read). A
// tokenizer that loads must round-trip a sample text (bpe_roundtrip_check.h).
#include <string>

#include "data/bpe_tokenizer.h"
#include "tests/fuzz/bpe_roundtrip_check.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  tt::fuzz::expect_only_tt_errors([&] {
    const tt::data::BpeTokenizer tok = tt::data::BpeTokenizer::from_hf_json(json, "fuzz");
    tt::fuzz::check_bpe_roundtrip(tok, "Hello, world! The 2nd line's text\n\n  spaces\tand \xff\xfe bytes");
    (void)tok.special_token_id("<|endoftext|>");
  });
  const std::string path = tt::fuzz::write_scratch_file("tokenizer.json", json);
  tt::fuzz::expect_only_tt_errors([&] { tt::data::BpeTokenizer::load(path); });
  return 0;
}
