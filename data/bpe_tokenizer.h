// Byte-level BPE tokenizer (GPT-2 and compatible vocabularies), bit-exact with tiktoken's "gpt2"
// encoding for OpenAI-format files, and with Hugging Face `tokenizers` for byte-level tokenizer.json.
// Design:
//   - Text is bytes. The GPT-2 pre-tokenizer (data/pretokenizer.h) splits it into pieces; each piece
//     is encoded independently, so a piece that is itself a token costs one hash lookup.
//   - Merging runs on token ids with a pair table (left id, right id) -> (priority, merged id).
//     OpenAI files (encoder.json + vocab.bpe) follow tiktoken: a whole piece that is a token is
//     emitted directly, and any adjacent pair whose byte concatenation is a merge-produced token may
//     merge, lowest merge rank first, leftmost on ties. tokenizer.json follows Hugging Face: only
//     the listed merge pairs merge, in list order. For GPT-2's files both give the same ids.
//   - Pieces that need merging are memoised in a bounded per-thread cache, so repeated words cost
//     one lookup; pieces longer than a few dozen bytes merge with a heap (O(n log n)), shorter ones
//     with a linear scan.
//   - Special tokens (e.g. <|endoftext|>) have ids and decode to their text, but encode() never
//     produces them: "<|endoftext|>" in the text is ordinary text. Callers insert eot_id() themselves.
// An instance is immutable after load and cheap to copy (shared state); every const method is safe
// to call from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tt::data {

class BpeTokenizer {
 public:
  // `path` is a directory holding encoder.json + vocab.bpe (OpenAI/GPT-2 format) or tokenizer.json
  // (Hugging Face byte-level BPE: model.vocab, model.merges as "a b" strings or [a, b] pairs,
  // added_tokens), or a path to tokenizer.json, encoder.json or vocab.bpe itself. A directory with
  // both formats uses the OpenAI files. Every HF added token counts as special (never produced by
  // encode); in encoder.json the special tokens are the entries that are neither a single byte nor
  // the product of a merge in vocab.bpe (for GPT-2: <|endoftext|>). Throws tt::Error(kData, what, where=file, hint) for
  // missing files, malformed JSON, unknown byte-level symbols, merges that refer to tokens not in the vocab, a
  // vocabulary without all 256 bytes, and models that are not byte-level BPE.
  static BpeTokenizer load(const std::string& path);
  // From in-memory OpenAI-format contents (checkpoints embed the tokenizer); `origin` names the
  // source in error messages.
  static BpeTokenizer from_openai_files(const std::string& encoder_json, const std::string& vocab_bpe,
                                        const std::string& origin);
  // From an in-memory Hugging Face tokenizer.json.
  static BpeTokenizer from_hf_json(const std::string& tokenizer_json, const std::string& origin);

  // Appends the ids of `text` (any bytes; invalid UTF-8 is encoded byte-level like the rest).
  // Special tokens are not recognised: they are encoded as plain text.
  void encode(std::string_view text, std::vector<uint32_t>& out) const;
  std::vector<uint32_t> encode(std::string_view text) const;
  // Exact bytes of the ids (special tokens decode to their text). Throws tt::Error(kData) naming
  // the first id >= vocab_size().
  std::string decode(const std::vector<uint32_t>& ids) const;
  std::string decode(const uint32_t* ids, size_t n) const;
  // Raw bytes of one token; throws tt::Error(kData) for an id >= vocab_size().
  const std::string& token_bytes(uint32_t id) const;

  // One past the largest id, special tokens included (50257 for GPT-2).
  int vocab_size() const;
  // Id of a special (added) token such as "<|endoftext|>"; nullopt when the tokenizer has none.
  std::optional<uint32_t> special_token_id(const std::string& token) const;
  // Id of <|endoftext|>; throws tt::Error(kData) when the tokenizer has no such token.
  uint32_t eot_id() const;
  // Where the tokenizer was loaded from (a path or the `origin` given).
  const std::string& origin() const;

  // The tokenizer in OpenAI format: encoder.json (byte-level string -> id, in id order, special
  // tokens included) and vocab.bpe ("#version: 0.2" then one merge per line, in rank order).
  // from_openai_files(encoder_json(), vocab_bpe()) encodes like this tokenizer whenever the
  // vocabulary's merges are consistent (always for GPT-2 and for write_openai_tokenizer's output).
  std::string encoder_json() const;
  std::string vocab_bpe() const;

  struct Impl;

 private:
  explicit BpeTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// GPT-2's bytes_to_unicode: the printable code point standing for each byte in vocabulary files,
// as UTF-8 ('!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves; the other bytes to U+0100 onwards).
const std::string& byte_to_unicode(uint8_t byte);
// Inverse over a whole byte-level string; false when it contains a code point that is not one of
// the 256 byte symbols (or is not valid UTF-8).
bool byte_level_decode(std::string_view symbols, std::string& bytes);
// Byte-level encoding of raw bytes (each byte -> its symbol).
std::string byte_level_encode(std::string_view bytes);

// Writes DIR/encoder.json and DIR/vocab.bpe atomically (DIR is created if missing) for a
// vocabulary given as raw bytes per id plus merges (raw bytes, in rank order); special tokens get
// the ids after the vocabulary, in order. Throws tt::Error(kData) when a merge's parts or result
// are not in the vocabulary, a byte has no token, or two ids share bytes; kRuntime on I/O failure.
void write_openai_tokenizer(const std::string& dir, const std::vector<std::string>& token_bytes,
                            const std::vector<std::pair<std::string, std::string>>& merges,
                            const std::vector<std::string>& special_tokens);

}  // namespace tt::data
