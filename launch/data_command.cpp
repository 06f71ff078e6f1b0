// `topotrain data synth|inspect`: argument parsing and reports over data/synth.h and data/shard.h.
// Decision: options accept "--name value" and "--name=value"; every bad value is a kUsage error
// that names the option, so a typo never silently falls back to a default.
#include "launch/data_command.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "data/shard.h"
#include "data/synth.h"

namespace tt {

namespace {

const char kDataUsage[] =
    "usage: topotrain data <command> [options]\n"
    "\n"
    "commands:\n"
    "  synth     write a synthetic Markov-chain corpus (train.bin, val.bin, synth.json)\n"
    "  inspect   show the header, size and token range of llm.c token shards\n"
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
    "usage: topotrain data inspect FILE|DIR|GLOB\n"
    "\n"
    "For each llm.c token shard (a file, every *.bin in a directory, or a quoted glob pattern) prints\n"
    "magic, version, dtype, token count, file size, min/max token id and the first tokens; when a\n"
    "synth.json sits next to the shard, also a decoded text preview.\n";

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

void inspect_one(const std::string& path) {
  data::ShardReader r(path);
  const int64_t n = r.num_tokens();
  uint32_t lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t t = r.token(i);
    if (i == 0 || t < lo) lo = t;
    if (i == 0 || t > hi) hi = t;
  }
  std::printf("%s\n", path.c_str());
  std::printf("  magic %d, version %d (llm.c %s tokens)\n", r.header().magic, r.header().version,
              data::token_width_name(r.width()));
  std::printf("  tokens %lld, file %zu bytes (1024-byte header + %lld x %zu)\n", static_cast<long long>(n),
              r.file_bytes(), static_cast<long long>(n), data::token_width_bytes(r.width()));
  if (n > 0)
    std::printf("  token ids: min %u, max %u\n", lo, hi);
  else
    std::printf("  token ids: none (empty shard)\n");
  const int64_t shown = std::min<int64_t>(n, 16);
  std::printf("  first tokens:");
  for (int64_t i = 0; i < shown; ++i) std::printf(" %u", r.token(i));
  std::printf("%s\n", n > shown ? " ..." : "");

  const std::string manifest_path = data::find_synth_manifest(path);
  if (manifest_path.empty()) return;
  data::SynthManifest m = data::read_synth_manifest(manifest_path);
  if (n > 0 && hi >= m.alphabet.size()) {
    std::printf("  (%s is next to it, but ids reach %u >= its vocab %d: no text preview)\n", manifest_path.c_str(),
                hi, m.vocab);
    return;
  }
  std::vector<int32_t> ids(static_cast<size_t>(std::min<int64_t>(n, 80)));
  r.copy_tokens(0, static_cast<int64_t>(ids.size()), ids.data());
  std::printf("  synthetic corpus (%s): vocab %d, order %d, entropy rate %.6f nats, floor(T=256) %.6f\n",
              manifest_path.c_str(), m.vocab, m.order, m.entropy_rate_nats, m.window_floor(256));
  std::printf("  text: \"%s\"\n", data::decode_chars(m.alphabet, ids).c_str());
}

int inspect_command(const std::vector<std::string>& args) {
  const std::string where = "topotrain data inspect";
  ParsedArgs p = parse_args(args, 1, {}, where);
  if (p.help) {
    std::fputs(kInspectUsage, stdout);
    return 0;
  }
  if (p.positional.size() != 1)
    throw Error(ErrorKind::kUsage, p.positional.empty() ? "missing FILE|DIR" : "expected one FILE|DIR|GLOB",
                where, "run `topotrain data inspect --help`");
  const std::vector<std::string> paths = data::resolve_shards(p.positional[0]);
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i) std::printf("\n");
    inspect_one(paths[i]);
  }
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
  if (args[0] == "inspect") return inspect_command(args);
  throw Error(ErrorKind::kUsage, "unknown command '" + args[0] + "'", "topotrain data",
              "commands are synth and inspect; run `topotrain data --help`");
}

}  // namespace tt
