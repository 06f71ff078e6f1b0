// `topotrain data synth|encode|inspect`: argument parsing and reports over data/ (encode lives in
// launch/encode_command.cpp).
// Decision: options accept "--name value" and "--name=value"; every bad value is a kUsage error
// that names the option, so a typo never silently falls back to a default.
#include "launch/data_command.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <unistd.h>

#include <memory>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_writer.h"
#include "data/bpe_tokenizer.h"
#include "data/encode.h"
#include "data/shard.h"
#include "data/synth.h"
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

const char kSynthUsage[] =
    "usage: topotrain data synth --out DIR [options]\n"
    "\n"
    "Writes DIR/train.bin and DIR/val.bin (llm.c uint16 shards, independent streams of one seeded\n"
    "order-k Markov chain over printable characters) and DIR/synth.json, and prints the chain's exact\n"
    "entropy rate and the loss floor for training windows of T tokens: no model can reach a mean\n"
    "validation loss below floor(T) = (1/T) sum_{i<T} H(X_{i+1} | X_0..X_i).\n"
    "\n"
    "options:\n"
    "  --out DIR              output directory (created if missing)          [required]\n"
    "  --vocab V              tokens/characters, 2..73                       [32]\n"
    "  --order K              Markov order, 1..4                             [2]\n"
    "  --seed S               seed of the transition table and the samples   [1]\n"
    "  --concentration B      0 = uniform transitions; larger = more peaked  [8]\n"
    "  --train-tokens N       tokens in train.bin                            [1000000]\n"
    "  --val-tokens N         tokens in val.bin                              [100000]\n";

const char kInspectUsage[] =
    "usage: topotrain data inspect FILE|DIR|GLOB [--tokenizer DIR] [--synth]\n"
    "\n"
    "Validates llm.c token shards (a file, every *.bin in a directory, or a quoted glob pattern); a\n"
    "truncated or corrupt shard fails with exit code 3. Several shards: a table (dtype, tokens, bytes,\n"
    "min/max id, sha256 check against manifest.json when `data encode` wrote one), then the first\n"
    "shard in detail: magic, version, dtype, token count, file size, min/max token id, first tokens.\n"
    "\n"
    "options:\n"
    "  --tokenizer DIR   decode the first tokens with this BPE tokenizer and count <|endoftext|>\n"
    "  --synth           require the synth.json of `data synth` next to the shard and decode with it\n"
    "                    (without --synth the preview appears whenever a synth.json is there)\n";

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

// Splits "--name value" / "--name=value" options; positional words are kept in order.
struct ParsedArgs {
  std::map<std::string, std::string> options;
  std::vector<std::string> positional;
  bool help = false;
};

ParsedArgs parse_args(const std::vector<std::string>& args, size_t begin, const std::vector<std::string>& known,
                      const std::string& where) {
  ParsedArgs out;
  for (size_t i = begin; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_help(a)) {
      out.help = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a, value;
    size_t eq = a.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw Error(ErrorKind::kUsage, "unknown option " + name, where, "run `" + where + " --help`");
    if (!has_value) {
      if (i + 1 >= args.size())
        throw Error(ErrorKind::kUsage, "option " + name + " needs a value", where, "run `" + where + " --help`");
      value = args[++i];
    }
    out.options[name] = value;
  }
  return out;
}

int64_t parse_int(const ParsedArgs& p, const std::string& name, int64_t fallback, int64_t lo, int64_t hi,
                  const std::string& where) {
  auto it = p.options.find(name);
  if (it == p.options.end()) return fallback;
  const std::string& s = it->second;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw Error(ErrorKind::kUsage, str(name, " expects an integer, got '", s, "'"), where, "");
  if (v < lo || v > hi)
    throw Error(ErrorKind::kUsage, str(name, " ", v, " is outside ", lo, "..", hi), where, "");
  return v;
}

double parse_double(const ParsedArgs& p, const std::string& name, double fallback, const std::string& where) {
  auto it = p.options.find(name);
  if (it == p.options.end()) return fallback;
  const std::string& s = it->second;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw Error(ErrorKind::kUsage, str(name, " expects a number >= 0, got '", s, "'"), where, "");
  return v;
}

int synth_command(const std::vector<std::string>& args) {
  const std::string where = "topotrain data synth";
  ParsedArgs p = parse_args(args, 1,
                            {"--out", "--vocab", "--order", "--seed", "--concentration", "--train-tokens",
                             "--val-tokens"},
                            where);
  if (p.help) {
    std::fputs(kSynthUsage, stdout);
    return 0;
  }
  if (!p.positional.empty())
    throw Error(ErrorKind::kUsage, "unexpected argument '" + p.positional[0] + "'", where,
                "the output directory goes after --out");
  auto out_it = p.options.find("--out");
  if (out_it == p.options.end() || out_it->second.empty())
    throw Error(ErrorKind::kUsage, "missing --out DIR", where, "e.g. `topotrain data synth --out data/synth`");
  data::SynthSpec spec;
  spec.vocab = static_cast<int>(parse_int(p, "--vocab", spec.vocab, 2, data::kMaxSynthVocab, where));
  spec.order = static_cast<int>(parse_int(p, "--order", spec.order, 1, data::kMaxSynthOrder, where));
  spec.seed = static_cast<uint64_t>(parse_int(p, "--seed", 1, 0, INT64_MAX, where));
  spec.concentration = parse_double(p, "--concentration", spec.concentration, where);
  const int64_t train = parse_int(p, "--train-tokens", 1000000, 1, INT32_MAX, where);
  const int64_t val = parse_int(p, "--val-tokens", 100000, 1, INT32_MAX, where);
  const std::string& out = out_it->second;

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
    throw Error(ErrorKind::kData,
                str("shard holds ", r.num_tokens(), " tokens but ", idx->path, " lists ", e->tokens), path, hint);
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
  std::vector<std::string> rest;
  bool want_synth = false;
  for (const std::string& a : args) {
    if (a == "--synth") want_synth = true;
    else rest.push_back(a);
  }
  ParsedArgs p = parse_args(rest, 1, {"--tokenizer"}, where);
  if (p.help) {
    std::fputs(kInspectUsage, stdout);
    return 0;
  }
  if (p.positional.size() != 1)
    throw Error(ErrorKind::kUsage, p.positional.empty() ? "missing FILE|DIR" : "expected one FILE|DIR|GLOB",
                where, "run `topotrain data inspect --help`");
  std::unique_ptr<data::BpeTokenizer> tok;
  if (p.options.count("--tokenizer"))
    tok = std::make_unique<data::BpeTokenizer>(data::BpeTokenizer::load(p.options["--tokenizer"]));
  const std::vector<std::string> paths = data::resolve_shards(p.positional[0]);
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
  if (args.empty())
    throw Error(ErrorKind::kUsage, "missing command", "topotrain data", "run `topotrain data --help`");
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
  throw Error(ErrorKind::kUsage, "unknown command '" + args[0] + "'", "topotrain data",
              "commands are synth, encode, inspect, train-tokenizer, tokenize and detokenize; run `topotrain data --help`");
}

}  // namespace tt
