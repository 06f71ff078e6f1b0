// GPT-2 pre-tokenization: splits text into the pieces that byte-level BPE then encodes one by one,
// using the pattern of OpenAI's GPT-2 (and tiktoken's "gpt2" encoding):
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Design: one PCRE2 pattern compiled once (UTF + UCP + JIT, PCRE2_MATCH_INVALID_UTF) and matched
// leftmost-first with backtracking, as tiktoken's fancy-regex does. \s is spelled out as the Unicode
// White_Space set (what Rust's regex and therefore tiktoken use; PCRE2's UCP \s differs on U+0085
// and U+180E), and \p{L} / \p{N} are extended with the code points Unicode 15-16 added, so the
// split equals tiktoken 0.14's regardless of the installed PCRE2's Unicode version. Text is bytes, not validated UTF-8:
// bytes that are not valid UTF-8 can match nothing in PCRE2, so every maximal run of them between two matches becomes
// one piece of its own. Hence the pieces always tile the input exactly, and invalid input is split deterministically.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

namespace tt::data {

// The GPT-2 pattern as written by OpenAI (documentation; the compiled form spells out \s).
extern const char kGpt2PretokenizePattern[];

class Pretokenizer {
 public:
  // Compiles the pattern; throws tt::Error(kRuntime) if PCRE2 refuses it (e.g. built without
  // Unicode support). Copies share the compiled pattern.
  Pretokenizer();

  // Appends the pieces of `text`, in order, to `pieces`; their concatenation equals `text` and no
  // piece is empty. The views point into `text`. Thread-safe: const, with per-thread match data.
  // Throws tt::Error(kRuntime) only if PCRE2 fails internally (e.g. out of memory).
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;
  std::vector<std::string_view> split(std::string_view text) const;
  // Incremental form for long texts: appends pieces starting at byte `offset` (0, or a value this
  // function returned for the same text) until at least `max_pieces` were appended or the text
  // ends, and returns the offset after the last piece. The pieces are exactly those split() gives.
  size_t split(std::string_view text, size_t offset, size_t max_pieces, std::vector<std::string_view>& pieces) const;

 private:
  std::shared_ptr<void> code_;  // pcre2_code_8*, freed with pcre2_code_free_8
};

}  // namespace tt::data
