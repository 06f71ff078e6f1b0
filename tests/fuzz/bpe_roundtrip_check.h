// The byte-level BPE invariant the tokenizer targets check on every tokenizer that loads: decoding
// what encode produced gives the input bytes back, encode never produces an id outside the
// vocabulary or a special token, and encoding is deterministic (the per-thread piece cache must not
// change the result).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "data/bpe_tokenizer.h"

namespace tt::fuzz {

inline void check_bpe_roundtrip(const tt::data::BpeTokenizer& tok, std::string_view text) {
  const std::vector<uint32_t> ids = tok.encode(text);
  for (uint32_t id : ids)
    if (id >= uint32_t(tok.vocab_size())) {
      std::fprintf(stderr, "FINDING: encode produced id %u >= vocab_size %d\n", id, tok.vocab_size());
      std::abort();
    }
  if (tok.decode(ids) != text) {
    std::fprintf(stderr, "FINDING: decode(encode(x)) != x (%zu bytes in, %zu ids)\n", text.size(), ids.size());
    std::abort();
  }
  if (tok.encode(text) != ids) {
    std::fprintf(stderr, "FINDING: encoding the same text twice gave different ids\n");
    std::abort();
  }
}

}  // namespace tt::fuzz
