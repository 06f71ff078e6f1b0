// TextCodec: chooses and applies the id <-> text mapping (see text_codec.h).
#include "data/text_codec.h"

#include "core/error.h"
#include "data/shard.h"
#include "data/synth.h"

namespace tt {

TextCodec TextCodec::chars(std::string alphabet) {
  TextCodec c;
  c.kind_ = Kind::kChars;
  c.alphabet_ = std::move(alphabet);
  return c;
}

TextCodec TextCodec::parse(const std::string& spec) {
  if (spec == "none") return none();
  if (spec.rfind("chars:", 0) == 0) return chars(spec.substr(6));
  throw Error(ErrorKind::kCheckpoint, "unknown tokenizer spec '" + spec.substr(0, 40) + "'", "checkpoint section 'tokenizer'",
              "the checkpoint was written by a newer topotrain; upgrade");
}

std::string TextCodec::serialize() const { return kind_ == Kind::kChars ? "chars:" + alphabet_ : "none"; }

std::string TextCodec::describe() const {
  return kind_ == Kind::kChars ? "synthetic character alphabet (" + std::to_string(alphabet_.size()) + " symbols)"
                               : "no tokenizer (token ids)";
}

std::vector<int32_t> TextCodec::encode(const std::string& text) const {
  if (kind_ == Kind::kChars) return data::encode_chars(alphabet_, text);
  // "none": the prompt is a list of integer ids separated by spaces or commas.
  std::vector<int32_t> ids;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    try {
      ids.push_back(std::stoi(cur));
    } catch (const std::exception&) {
      throw Error(ErrorKind::kData, "prompt token '" + cur + "' is not an integer id", "--prompt",
                  "this model has no tokenizer: give the prompt as token ids, e.g. --prompt \"15496 11 995\"");
    }
    cur.clear();
  };
  for (char ch : text) {
    if (ch == ' ' || ch == ',' || ch == '[' || ch == ']') flush();
    else cur += ch;
  }
  flush();
  return ids;
}

std::string TextCodec::decode(const std::vector<int32_t>& ids) const {
  if (kind_ == Kind::kChars) return data::decode_chars(alphabet_, ids);
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "]";
}

TextCodec codec_for_shards(const std::string& spec) {
  const auto shards = data::resolve_shards(spec);
  const std::string manifest = data::find_synth_manifest(shards.front());
  if (manifest.empty()) return TextCodec::none();
  return TextCodec::chars(data::read_synth_manifest(manifest).alphabet);
}

}  // namespace tt
