// TextCodec: chooses and applies the id <-> text mapping (see text_codec.h).
#include "data/text_codec.h"

#include <filesystem>

#include "core/error.h"
#include "data/bpe_tokenizer.h"
#include "data/encode.h"
#include "data/shard.h"
#include "data/synth.h"

namespace tt {

TextCodec TextCodec::chars(std::string alphabet) {
  TextCodec c;
  c.kind_ = Kind::kChars;
  c.alphabet_ = std::move(alphabet);
  return c;
}

TextCodec TextCodec::bpe(const data::BpeTokenizer& tokenizer) {
  TextCodec c;
  c.kind_ = Kind::kBpe;
  c.bpe_ = std::make_shared<const data::BpeTokenizer>(tokenizer);
  return c;
}

TextCodec TextCodec::parse(const std::string& spec) {
  if (spec == "none") return none();
  if (spec.rfind("chars:", 0) == 0) return chars(spec.substr(6));
  if (spec.rfind("bpe:", 0) == 0) {
    const size_t nl = spec.find('\n');
    size_t len = 0;
    try {
      len = std::stoul(spec.substr(4, nl - 4));
    } catch (const std::exception&) {
      len = spec.size();  // unparsable length: reported as damaged below
    }
    if (nl == std::string::npos || nl + 1 + len > spec.size())
      throw Error(ErrorKind::kCheckpoint, "damaged tokenizer section", "checkpoint section 'tokenizer'",
                  "resume from an earlier checkpoint");
    return bpe(data::BpeTokenizer::from_openai_files(spec.substr(nl + 1, len), spec.substr(nl + 1 + len),
                                                     "checkpoint section 'tokenizer'"));
  }
  throw Error(ErrorKind::kCheckpoint, "unknown tokenizer spec '" + spec.substr(0, 40) + "'",
              "checkpoint section 'tokenizer'", "the checkpoint was written by a newer topotrain; upgrade");
}

std::string TextCodec::serialize() const {
  switch (kind_) {
    case Kind::kChars:
      return "chars:" + alphabet_;
    case Kind::kBpe: {
      const std::string encoder = bpe_->encoder_json();
      return "bpe:" + std::to_string(encoder.size()) + "\n" + encoder + bpe_->vocab_bpe();
    }
    case Kind::kNone:
      break;
  }
  return "none";
}

std::string TextCodec::describe() const {
  switch (kind_) {
    case Kind::kChars:
      return "synthetic character alphabet (" + std::to_string(alphabet_.size()) + " symbols)";
    case Kind::kBpe:
      return "byte-level BPE tokenizer (" + std::to_string(bpe_->vocab_size()) + " tokens, " + bpe_->origin() + ")";
    case Kind::kNone:
      break;
  }
  return "no tokenizer (token ids)";
}

std::vector<int32_t> TextCodec::encode(const std::string& text) const {
  if (kind_ == Kind::kChars) return data::encode_chars(alphabet_, text);
  if (kind_ == Kind::kBpe) {
    const std::vector<uint32_t> ids = bpe_->encode(text);
    return std::vector<int32_t>(ids.begin(), ids.end());
  }
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
    if (ch == ' ' || ch == ',' || ch == '[' || ch == ']')
      flush();
    else
      cur += ch;
  }
  flush();
  return ids;
}

std::string TextCodec::decode(const std::vector<int32_t>& ids) const {
  if (kind_ == Kind::kChars) return data::decode_chars(alphabet_, ids);
  if (kind_ == Kind::kBpe) return bpe_->decode(std::vector<uint32_t>(ids.begin(), ids.end()));
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "]";
}

TextCodec codec_for_shards(const std::string& spec, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty()) return TextCodec::bpe(data::BpeTokenizer::load(tokenizer_path));
  const auto shards = data::resolve_shards(spec);
  const auto encode_manifest = std::filesystem::path(shards.front()).parent_path() / data::kEncodeManifestName;
  if (std::filesystem::exists(encode_manifest)) {
    const data::EncodeManifest m = data::read_encode_manifest(encode_manifest.string());
    if (!m.tokenizer.empty()) return TextCodec::bpe(data::BpeTokenizer::load(m.tokenizer));
  }
  const std::string manifest = data::find_synth_manifest(shards.front());
  if (manifest.empty()) return TextCodec::none();
  return TextCodec::chars(data::read_synth_manifest(manifest).alphabet);
}

}  // namespace tt
