// `topotrain data synth|encode|inspect`: argument parsing and reports over data/ (encode lives in
// launch/encode_command.cpp).
// Decision: options are parsed by launch/args.h (ArgParser: "--name value" and "--name=value"); every
// bad value is a kUsage error that names the option, so a typo never silently falls back to a default.
#include "launch/data_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_writer.h"
#include "data/bpe_tokenizer.h"
#include "data/encode.h"
#include "data/shard.h"
#include "data/synth.h"
#include "launch/args.h"
#include "launch/tokenizer_command.h"

namespace tt {

// `topotrain data encode` (launch/encode_command.cpp).
int data_encode_main(const std::vector<std::string>& args);

int train_tokenizer_command(const std::vector<std::string>& args);  // launch/train_tokenizer_command.cpp

namespace {

const char kDataUsage[] =
    "usage: topotrain data <command> [options]\n"
    "\n"
    "commands:\n"
    "  synth     write a synthetic Markov-chain corpus (train.bin, val.bin, synth.json)\n"
    "  encode    tokenize text/JSONL files into llm.c shards with a GPT-2 BPE tokenizer\n"
    "  inspect   validate llm.c token shards; header, size, token range, decoded preview\n"
    "  train-tokenizer  train a byte-level BPE tokenizer on text (encoder.json, vocab.bpe)\n"
    "  tokenize  print the GPT-2 BPE ids of stdin as a JSON array\n"
    "  detokenize  write the bytes of a JSON array of ids read from stdin\n"
    "\n"
    "Run `topotrain data <command> --help` for the options of a command.\n";

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

// The words after `topotrain data <command>`.
std::vector<std::string> command_args(const std::vector<std::string>& args) {
  return std::vector<std::string>(args.begin() + (args.empty() ? 0 : 1), args.end());
}

int synth_command(const std::vector<std::string>& args) {
  const std::string where = "topotrain data synth";
  const data::SynthSpec defaults;
  ArgParser p(where,
              "Writes DIR/train.bin and DIR/val.bin (llm.c uint16 shards, independent streams of one seeded\n"
              "order-k Markov chain over printable characters) and DIR/synth.json, and prints the chain's exact\n"
              "entropy rate and the loss floor for training windows of T tokens: no model can reach a mean\n"
              "validation loss below floor(T) = (1/T) sum_{i<T} H(X_{i+1} | X_0..X_i).");
  p.option("--out", "DIR", "output directory (created if missing)", "", true)
      .option("--vocab", "V", str("tokens/characters, 2..", data::kMaxSynthVocab), str(defaults.vocab))
      .option("--order", "K", str("Markov order, 1..", data::kMaxSynthOrder), str(defaults.order))
      .option("--seed", "S", "seed of the transition table and the samples", str(defaults.seed))
      .option("--concentration", "B", "0 = uniform transitions; larger = more peaked", str(defaults.concentration))
      .option("--train-tokens", "N", "tokens in train.bin", "1000000")
      .option("--val-tokens", "N", "tokens in val.bin", "100000");
  if (!p.parse(command_args(args))) return 0;
  const std::string out = p.get("--out");
  if (out.empty())
    throw Error(ErrorKind::kUsage, "missing --out DIR", where, "e.g. `topotrain data synth --out data/synth`");
  data::SynthSpec spec;
  spec.vocab = static_cast<int>(p.get_int64_in("--vocab", 2, data::kMaxSynthVocab));
  spec.order = static_cast<int>(p.get_int64_in("--order", 1, data::kMaxSynthOrder));
  spec.seed = static_cast<uint64_t>(p.get_int64_in("--seed", 0, INT64_MAX));
  spec.concentration = p.get_double("--concentration");
  if (!std::isfinite(spec.concentration) || spec.concentration < 0)
    throw Error(ErrorKind::kUsage, str("--concentration expects a number >= 0, got '", p.get("--concentration"), "'"),
                where, "");
  const int64_t train = p.get_int64_in("--train-tokens", 1, INT32_MAX);
  const int64_t val = p.get_int64_in("--val-tokens", 1, INT32_MAX);

  data::synth_write(spec, out, train, val);
  // Report from what was written: the manifest and the train shard.
  const std::string base = out.back() == '/' ? out : out + "/";
  const std::string manifest_path = base + data::kSynthManifestName;
  const data::SynthManifest m = data::read_synth_manifest(manifest_path);

  std::printf("wrote %strain.bin (%lld tokens), %sval.bin (%lld tokens), %s\n", base.c_str(),
              static_cast<long long>(m.train_tokens), base.c_str(), static_cast<long long>(m.val_tokens),
              manifest_path.c_str());
  std::printf("chain: vocab %d, order %d, seed %llu, concentration %g\n", m.vocab, m.order,
              static_cast<unsigned long long>(m.seed), m.concentration);
  std::printf("entropy rate: %.6f nats/token (%.4f bits); uniform would be ln %d = %.6f\n", m.entropy_rate_nats,
              m.entropy_rate_nats / std::log(2.0), m.vocab, std::log(double(m.vocab)));
  std::printf("h[c] = H(X_c | c previous tokens), nats:");
  for (size_t c = 0; c < m.conditional_entropy_nats.size(); ++c)
    std::printf(" h[%zu]=%.6f", c, m.conditional_entropy_nats[c]);
  std::printf("\nloss floor for windows of T tokens (target x[i+1] predicted from x[0..i]):\n");
  for (int64_t t : {32, 64, 128, 256, 1024})
    std::printf("  T=%-5lld %.6f nats\n", static_cast<long long>(t), m.window_floor(t));
  data::ShardReader train_shard(base + "train.bin");
  std::vector<int32_t> preview(static_cast<size_t>(std::min<int64_t>(train_shard.num_tokens(), 72)));
  train_shard.copy_tokens(0, static_cast<int64_t>(preview.size()), preview.data());
  std::printf("train.bin starts: \"%s\"\n", data::decode_chars(m.alphabet, preview).c_str());
  return 0;
}

struct ShardStats {
  int64_t tokens = 0;
  uint32_t lo = 0, hi = 0;
  int64_t eot = 0;  // occurrences of the tokenizer's <|endoftext|> (documents), when one is given
};

ShardStats scan_shard(const data::ShardReader& r, const data::BpeTokenizer* tok) {
  ShardStats s;
  s.tokens = r.num_tokens();
  const uint32_t eot = tok ? tok->eot_id() : 0;
  for (int64_t i = 0; i < s.tokens; ++i) {
    const uint32_t t = r.token(i);
    if (i == 0 || t < s.lo) s.lo = t;
    if (i == 0 || t > s.hi) s.hi = t;
    if (tok && t == eot) ++s.eot;
  }
  return s;
}

// Shard -> its manifest.json entry (written by `data encode`), when the directory has one.
struct ManifestIndex {
  std::string path;
  data::EncodeManifest manifest;
  const data::EncodedShard* find(const std::string& shard_path) const {
    const std::string base = shard_path.substr(shard_path.rfind('/') + 1);
    for (const auto& s : manifest.shards)
      if (s.file == base) return &s;
    return nullptr;
  }
};

std::unique_ptr<ManifestIndex> manifest_for(const std::string& shard_path) {
  const std::string path = parent_dir(shard_path) + "/" + data::kEncodeManifestName;
  if (::access(path.c_str(), F_OK) != 0) return nullptr;
  auto m = std::make_unique<ManifestIndex>();
  m->path = path;
  m->manifest = data::read_encode_manifest(path);
  return m;
}

// "ok" when the shard matches its manifest entry, "-" when it has none; throws kData on a mismatch.
std::string verify_against_manifest(const std::string& path, const data::ShardReader& r, const ManifestIndex* idx) {
  const data::EncodedShard* e = idx ? idx->find(path) : nullptr;
  if (!e) return "-";
  const std::string hint = "the shard is corrupt or was modified after encoding; re-run `topotrain data encode`";
  if (e->tokens != r.num_tokens())
    throw Error(ErrorKind::kData, str("shard holds ", r.num_tokens(), " tokens but ", idx->path, " lists ", e->tokens),
                path, hint);
  if (data::file_sha256(path) != e->sha256)
    throw Error(ErrorKind::kData, str("shard content does not match the sha256 in ", idx->path), path, hint);
  return "ok";
}

std::string preview_text(const std::string& text, size_t max_bytes) {
  return json_escape(text.size() > max_bytes ? text.substr(0, max_bytes) : text);
}

void inspect_one(const std::string& path, const data::BpeTokenizer* tok, bool want_synth, const ManifestIndex* idx) {
  data::ShardReader r(path);
  const std::string verified = verify_against_manifest(path, r, idx);
  const ShardStats st = scan_shard(r, tok);
  const int64_t n = st.tokens;
  std::printf("%s\n", path.c_str());
  std::printf("  magic %d, version %d (llm.c %s tokens)\n", r.header().magic, r.header().version,
              data::token_width_name(r.width()));
  std::printf("  tokens %lld, file %zu bytes (1024-byte header + %lld x %zu)\n", static_cast<long long>(n),
              r.file_bytes(), static_cast<long long>(n), data::token_width_bytes(r.width()));
  if (n > 0)
    std::printf("  token ids: min %u, max %u\n", st.lo, st.hi);
  else
    std::printf("  token ids: none (empty shard)\n");
  const int64_t shown = std::min<int64_t>(n, 16);
  std::printf("  first tokens:");
  for (int64_t i = 0; i < shown; ++i) std::printf(" %u", r.token(i));
  std::printf("%s\n", n > shown ? " ..." : "");
  if (verified == "ok") std::printf("  sha256 matches %s\n", idx->path.c_str());

  if (tok) {
    if (n > 0 && int64_t(st.hi) >= tok->vocab_size()) {
      std::printf("  (ids reach %u >= the tokenizer's vocab %d: no text preview)\n", st.hi, tok->vocab_size());
    } else {
      const int64_t count = std::min<int64_t>(n, 64);
      std::vector<uint32_t> ids(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) ids[size_t(i)] = r.token(i);
      std::printf("  tokenizer %s: %lld <|endoftext|> (documents)\n", tok->origin().c_str(),
                  static_cast<long long>(st.eot));
      std::printf("  decoded (first %lld tokens): \"%s\"%s\n", static_cast<long long>(count),
                  preview_text(tok->decode(ids), 600).c_str(), n > count ? " ..." : "");
    }
  }

  const std::string manifest_path = data::find_synth_manifest(path);
  if (manifest_path.empty()) {
    if (want_synth)
      throw Error(ErrorKind::kData, "no synth.json next to the shard", path,
                  "--synth decodes shards written by `topotrain data synth`; drop --synth for other shards");
    return;
  }
  data::SynthManifest m = data::read_synth_manifest(manifest_path);
  if (n > 0 && st.hi >= m.alphabet.size()) {
    if (want_synth)
      throw Error(ErrorKind::kData, str("ids reach ", st.hi, " >= the synthetic vocab ", m.vocab), path,
                  "this shard was not written with " + manifest_path);
    std::printf("  (%s is next to it, but ids reach %u >= its vocab %d: no text preview)\n", manifest_path.c_str(),
                st.hi, m.vocab);
    return;
  }
  std::vector<int32_t> ids(static_cast<size_t>(std::min<int64_t>(n, 80)));
  r.copy_tokens(0, static_cast<int64_t>(ids.size()), ids.data());
  std::printf("  synthetic corpus (%s): vocab %d, order %d, entropy rate %.6f nats, floor(T=256) %.6f\n",
              manifest_path.c_str(), m.vocab, m.order, m.entropy_rate_nats, m.window_floor(256));
  std::printf("  text: \"%s\"\n", data::decode_chars(m.alphabet, ids).c_str());
}

// One row per shard (every shard is opened and validated first, so a corrupt one fails the command).
void inspect_table(const std::vector<std::string>& paths, const data::BpeTokenizer* tok, const ManifestIndex* idx) {
  size_t name_w = 5;
  for (const auto& p : paths) name_w = std::max(name_w, p.size());
  std::printf("%-*s  %-6s  %12s  %14s  %8s  %8s  %s%s\n", int(name_w), "shard", "dtype", "tokens", "bytes", "min id",
              "max id", "sha256", tok ? "  docs" : "");
  int64_t total_tokens = 0, total_docs = 0;
  uint64_t total_bytes = 0;
  for (const auto& p : paths) {
    data::ShardReader r(p);
    const std::string verified = verify_against_manifest(p, r, idx);
    const ShardStats st = scan_shard(r, tok);
    std::printf("%-*s  %-6s  %12lld  %14zu  %8s  %8s  %-6s", int(name_w), p.c_str(), data::token_width_name(r.width()),
                static_cast<long long>(st.tokens), r.file_bytes(), st.tokens ? std::to_string(st.lo).c_str() : "-",
                st.tokens ? std::to_string(st.hi).c_str() : "-", verified.c_str());
    if (tok) std::printf("  %lld", static_cast<long long>(st.eot));
    std::printf("\n");
    total_tokens += st.tokens;
    total_docs += st.eot;
    total_bytes += r.file_bytes();
  }
  std::printf("%-*s  %-6s  %12lld  %14llu", int(name_w), str(paths.size(), " shards").c_str(), "",
              static_cast<long long>(total_tokens), static_cast<unsigned long long>(total_bytes));
  if (tok) std::printf("  %8s  %8s  %-6s  %lld", "", "", "", static_cast<long long>(total_docs));
  std::printf("\n");
  if (idx) {
    const auto& m = idx->manifest;
    std::printf("manifest %s: tokenizer %s (vocab %lld), %lld documents, %lld tokens (val %lld, train %lld)\n",
                idx->path.c_str(), m.tokenizer.c_str(), static_cast<long long>(m.vocab_size),
                static_cast<long long>(m.documents), static_cast<long long>(m.tokens),
                static_cast<long long>(m.val_tokens), static_cast<long long>(m.train_tokens));
  }
}

int inspect_command(const std::vector<std::string>& args) {
  const std::string where = "topotrain data inspect";
  ArgParser p(where,
              "Validates llm.c token shards (a file, every *.bin in a directory, or a quoted glob pattern); a\n"
              "truncated or corrupt shard fails with exit code 3. Several shards: a table (dtype, tokens, bytes,\n"
              "min/max id, sha256 check against manifest.json when `data encode` wrote one), then the first\n"
              "shard in detail: magic, version, dtype, token count, file size, min/max token id, first tokens.");
  p.option("--tokenizer", "DIR", "decode the first tokens with this BPE tokenizer and count <|endoftext|>")
      .flag("--synth", "require the synth.json of `data synth` next to the shard (else: decode if there)")
      .positional("FILE|DIR|GLOB", "a shard, a directory of *.bin shards, or a quoted glob pattern");
  if (!p.parse(command_args(args))) return 0;
  if (p.positionals().size() != 1)
    throw Error(ErrorKind::kUsage, "expected one FILE|DIR|GLOB", where, "run `topotrain data inspect --help`");
  const bool want_synth = p.get_flag("--synth");
  std::unique_ptr<data::BpeTokenizer> tok;
  if (p.has("--tokenizer")) tok = std::make_unique<data::BpeTokenizer>(data::BpeTokenizer::load(p.get("--tokenizer")));
  const std::vector<std::string> paths = data::resolve_shards(p.positionals()[0]);
  const std::unique_ptr<ManifestIndex> idx = manifest_for(paths.front());
  if (paths.size() > 1) {
    inspect_table(paths, tok.get(), idx.get());
    std::printf("\n");
  }
  inspect_one(paths.front(), tok.get(), want_synth, idx.get());
  return 0;
}

}  // namespace

int data_main(const std::vector<std::string>& args) {
  if (args.empty()) throw Error(ErrorKind::kUsage, "missing command", "topotrain data", "run `topotrain data --help`");
  if (is_help(args[0])) {
    std::fputs(kDataUsage, stdout);
    return 0;
  }
  if (args[0] == "synth") return synth_command(args);
  if (args[0] == "encode") return data_encode_main(args);
  if (args[0] == "inspect") return inspect_command(args);
  if (args[0] == "train-tokenizer") return train_tokenizer_command(args);  // train_tokenizer_command.cpp
  if (args[0] == "tokenize") return data_tokenize_main(Args(args.begin() + 1, args.end()));
  if (args[0] == "detokenize") return data_detokenize_main(Args(args.begin() + 1, args.end()));
  throw Error(
      ErrorKind::kUsage, "unknown command '" + args[0] + "'", "topotrain data",
      "commands are synth, encode, inspect, train-tokenizer, tokenize and detokenize; run `topotrain data --help`");
}

}  // namespace tt
