// How token ids turn into text and back for prompts and samples. Today: the character alphabet of
// the built-in synthetic corpus (from synth.json next to the shards), or "none" (ids are printed as
// numbers). The codec is serialized into checkpoints so `topotrain sample` needs nothing but the
// checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt {

class TextCodec {
 public:
  static TextCodec none() { return TextCodec(); }
  static TextCodec chars(std::string alphabet);
  // Inverse of serialize(); throws kCheckpoint on an unknown spec.
  static TextCodec parse(const std::string& spec);

  bool has_text() const { return kind_ != Kind::kNone; }
  std::string serialize() const;  // "none" or "chars:<alphabet>"
  std::string describe() const;   // for logs
  // Throws kData naming the first character that is not in the vocabulary.
  std::vector<int32_t> encode(const std::string& text) const;
  // Ids as text ("[12 5 7]" for the none codec).
  std::string decode(const std::vector<int32_t>& ids) const;

 private:
  enum class Kind { kNone, kChars };
  Kind kind_ = Kind::kNone;
  std::string alphabet_;
};

// The codec for training shards `spec` (file/dir/glob): chars when a synth.json sits beside the first
// shard, otherwise none.
TextCodec codec_for_shards(const std::string& spec);

}  // namespace tt
