// Fuzz target: JSONL corpora (data/encode.h encode_corpus on one .jsonl file: the "text" field of
// each line, tokenized with the committed fuzz vocabulary, written as shards and a manifest, which
// is read back with read_encode_manifest). One thread, so a finding reproduces.
#include <string>

#include "data/bpe_tokenizer.h"
#include "data/encode.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const tt::data::TextEncoder& encoder() {
  static const tt::data::BpeTokenizer tok = tt::data::BpeTokenizer::load(tt::fuzz::source_dir() + "/tests/fuzz/vocab");
  static const tt::data::TextEncoder enc = tt::data::text_encoder(tok);
  return enc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tt::fuzz::quiet_logs();
  const tt::data::TextEncoder& enc = encoder();
  const std::string input =
      tt::fuzz::write_scratch_file("corpus.jsonl", std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string out = tt::fuzz::scratch_dir() + "/encoded";
  tt::fuzz::clear_dir(out);
  tt::data::EncodeOptions options;
  options.inputs = {input};
  options.out_dir = out;
  options.name = "fuzz";
  options.threads = 1;
  options.shard_tokens = 4096;
  options.val_tokens = 64;
  options.unit_bytes = 1024;
  options.progress_interval_s = 1e9;
  tt::fuzz::expect_only_tt_errors([&] {
    const tt::data::EncodeResult result = tt::data::encode_corpus(options, enc);
    tt::data::read_encode_manifest(result.manifest_path);
  });
  return 0;
}
