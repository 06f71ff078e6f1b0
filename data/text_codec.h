// How token ids turn into text and back for prompts and samples: the GPT-2-style byte-level BPE
// tokenizer a data set was encoded with (named by manifest.json beside the shards, or by
// data.tokenizer), the character alphabet of the built-in synthetic corpus (synth.json), or "none"
// (ids are printed as numbers). The codec is serialized into checkpoints, tokenizer files included,
// so `topotrain sample` needs nothing but the checkpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tt {

namespace data {
class BpeTokenizer;
}

class TextCodec {
 public:
  static TextCodec none() { return TextCodec(); }
  static TextCodec chars(std::string alphabet);
  static TextCodec bpe(const data::BpeTokenizer& tokenizer);
  // Inverse of serialize(); throws kCheckpoint on an unknown or damaged spec.
  static TextCodec parse(const std::string& spec);

  bool has_text() const { return kind_ != Kind::kNone; }
  // The byte-level BPE tokenizer behind a bpe codec (nullptr for the others).
  const data::BpeTokenizer* bpe_tokenizer() const { return bpe_.get(); }
  std::string serialize() const;  // "none", "chars:<alphabet>" or "bpe:<len>\n<encoder.json><vocab.bpe>"
  std::string describe() const;   // for logs
  // Throws kData naming the first character that is not in the vocabulary.
  std::vector<int32_t> encode(const std::string& text) const;
  // Ids as text ("[12 5 7]" for the none codec).
  std::string decode(const std::vector<int32_t>& ids) const;

 private:
  enum class Kind { kNone, kChars, kBpe };
  Kind kind_ = Kind::kNone;
  std::string alphabet_;
  std::shared_ptr<const data::BpeTokenizer> bpe_;
};

// The codec for training shards `spec` (file/dir/glob): `tokenizer_path` when given, else the
// tokenizer named by manifest.json beside the first shard, else chars when a synth.json is there,
// else none.
TextCodec codec_for_shards(const std::string& spec, const std::string& tokenizer_path = "");

}  // namespace tt
