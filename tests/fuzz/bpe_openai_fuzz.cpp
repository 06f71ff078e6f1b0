// Fuzz target: GPT-2 tokenizer files (data/bpe_tokenizer.h BpeTokenizer::from_openai_files): the
// input is encoder.json, "\n@@\n", vocab.bpe. A tokenizer that loads must round-trip a sample text
// (bpe_roundtrip_check.h) and print itself back as files that load.
#include <string>

#include "data/bpe_tokenizer.h"
#include "tests/fuzz/bpe_roundtrip_check.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = tt::fuzz::split_input(data, size, "\n@@\n");
  const std::string encoder(parts[0]);
  const std::string merges = parts.size() > 1 ? std::string(parts[1]) : std::string();
  tt::fuzz::expect_only_tt_errors([&] {
    const tt::data::BpeTokenizer tok = tt::data::BpeTokenizer::from_openai_files(encoder, merges, "fuzz");
    tt::fuzz::check_bpe_roundtrip(tok, "Hello, world! The 2nd line's text\n\n  spaces\tand \xff\xfe bytes");
    (void)tok.special_token_id("<|endoftext|>");
    tt::data::BpeTokenizer::from_openai_files(tok.encoder_json(), tok.vocab_bpe(), "fuzz (printed)");
  });
  return 0;
}
