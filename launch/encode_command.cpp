// `topotrain data encode`: text/JSONL -> llm.c token shards with a GPT-2 BPE tokenizer.
//   topotrain data encode --tokenizer DIR --input PATH... --out DIR [--name NAME]
//                         [--shard-tokens N] [--val-tokens N] [--threads N] [--separator STR] [--quiet]
// Decision: a thin layer over data/encode.h — argument parsing, the stderr progress bar and the
// summary; everything it reports comes from EncodeResult, so the library is what tests exercise.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/format.h"
#include "data/bpe_tokenizer.h"
#include "data/encode.h"

namespace tt {

namespace {

const char kEncodeUsage[] =
    "usage: topotrain data encode --tokenizer DIR --input PATH... --out DIR [options]\n"
    "\n"
    "Tokenizes text into llm.c token shards (uint16 for vocabularies up to 65536 ids, else uint32):\n"
    "<out>/<name>_val_000000.bin holds the first --val-tokens tokens, <name>_train_NNNNNN.bin the rest,\n"
    "--shard-tokens per shard; <out>/manifest.json records the tokenizer, counts and SHA-256 of every\n"
    "shard. Each document is preceded by <|endoftext|>, as in llm.c. The output is byte-identical for\n"
    "any --threads.\n"
    "\n"
    "inputs (--input takes one or more paths and may be repeated):\n"
    "  FILE.jsonl   one document per line, from its \"text\" field\n"
    "  FILE         plain text: the whole file is one document, or see --separator\n"
    "  DIR          every *.txt and *.jsonl below DIR, recursively, in sorted path order\n"
    "\n"
    "options:\n"
    "  --tokenizer DIR        encoder.json + vocab.bpe, or tokenizer.json (GPT-2 byte-level BPE) [required]\n"
    "  --input PATH...        files and/or directories                                         [required]\n"
    "  --out DIR              output directory (created; must not hold a data set already)     [required]\n"
    "  --name NAME            shard name prefix                               [last component of --out]\n"
    "  --shard-tokens N       tokens per shard                                            [100000000]\n"
    "  --val-tokens N         tokens of the val split, taken from the start           [0: no val split]\n"
    "  --threads N            tokenizing threads                                  [hardware threads]\n"
    "  --separator STR        split plain text into documents at STR (escapes \\n \\t \\r \\\\), or at\n"
    "                         blank lines with 'blankline'                            [whole file]\n"
    "  --quiet                no progress bar\n";

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

int64_t to_int(const std::string& name, const std::string& s, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw Error(ErrorKind::kUsage, str(name, " expects an integer, got '", s, "'"), "topotrain data encode",
                "run `topotrain data encode --help`");
  if (v < lo || v > hi)
    throw Error(ErrorKind::kUsage, str(name, " ", v, " is outside ", lo, "..", hi), "topotrain data encode", "");
  return v;
}

// Progress on stderr: redrawn in place on a terminal, one line every ~10 s otherwise (logs).
class ProgressBar {
 public:
  ProgressBar() : tty_(::isatty(STDERR_FILENO) == 1) {}
  void operator()(const data::EncodeProgress& p) {
    if (!tty_ && !p.done && p.elapsed_s - last_line_s_ < 10.0) return;
    last_line_s_ = p.elapsed_s;
    const double frac = p.bytes_total ? double(p.bytes_done) / double(p.bytes_total) : 1.0;
    const double mbps = p.elapsed_s > 0 ? double(p.bytes_done) / 1e6 / p.elapsed_s : 0.0;
    const double eta = frac > 0 ? p.elapsed_s * (1.0 - frac) / frac : NAN;
    const int width = 24, filled = int(frac * width + 0.5);
    std::string bar(size_t(filled), '#');
    bar.resize(size_t(width), '.');
    std::fprintf(stderr, "%sencode [%s] %3.0f%% | %.1f/%.1f MB | %.2f MB/s | %s docs | %s tokens | %d shards | %s %s%s",
                 tty_ ? "\r" : "", bar.c_str(), frac * 100.0, double(p.bytes_done) / 1e6, double(p.bytes_total) / 1e6,
                 mbps, format_count(double(p.documents)).c_str(), format_count(double(p.tokens)).c_str(), p.shards,
                 p.done ? "took" : "ETA", format_duration(p.done ? p.elapsed_s : eta).c_str(), tty_ ? "\033[K" : "\n");
    if (tty_ && p.done) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool tty_;
  double last_line_s_ = -1e9;
};

}  // namespace

// Declared in launch/data_command.cpp, which dispatches `topotrain data encode` here.
int data_encode_main(const std::vector<std::string>& args) {
  const std::string where = "topotrain data encode";
  std::map<std::string, std::string> opts;
  std::vector<std::string> inputs;
  bool quiet = false;
  const std::vector<std::string> known = {"--tokenizer",  "--out",     "--name",     "--shard-tokens",
                                          "--val-tokens", "--threads", "--separator"};
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_help(a)) {
      std::fputs(kEncodeUsage, stdout);
      return 0;
    }
    std::string name = a, value;
    const size_t eq = a.find('=');
    const bool has_value = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_value) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (name == "--quiet") {
      quiet = true;
    } else if (name == "--input") {
      if (has_value) inputs.push_back(value);
      size_t taken = 0;
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
        inputs.push_back(args[++i]);
        ++taken;
      }
      if (!has_value && taken == 0)
        throw Error(ErrorKind::kUsage, "option --input needs at least one path", where, "run `" + where + " --help`");
    } else if (std::find(known.begin(), known.end(), name) != known.end()) {
      if (!has_value) {
        if (i + 1 >= args.size())
          throw Error(ErrorKind::kUsage, "option " + name + " needs a value", where, "run `" + where + " --help`");
        value = args[++i];
      }
      opts[name] = value;
    } else if (a.rfind("--", 0) == 0) {
      throw Error(ErrorKind::kUsage, "unknown option " + name, where, "run `" + where + " --help`");
    } else {
      throw Error(ErrorKind::kUsage, "unexpected argument '" + a + "'", where, "inputs go after --input");
    }
  }
  if (!opts.count("--tokenizer"))
    throw Error(ErrorKind::kUsage, "missing --tokenizer DIR", where,
                "e.g. --tokenizer data/gpt2 (encoder.json + vocab.bpe)");
  if (inputs.empty())
    throw Error(ErrorKind::kUsage, "missing --input PATH...", where, "e.g. --input corpus/ notes.txt");
  if (!opts.count("--out") || opts["--out"].empty())
    throw Error(ErrorKind::kUsage, "missing --out DIR", where, "e.g. --out data/mycorpus");

  data::EncodeOptions o;
  o.inputs = inputs;
  o.out_dir = opts["--out"];
  o.name = opts.count("--name") ? opts["--name"] : "";
  if (opts.count("--shard-tokens")) o.shard_tokens = to_int("--shard-tokens", opts["--shard-tokens"], 1, INT32_MAX);
  if (opts.count("--val-tokens")) o.val_tokens = to_int("--val-tokens", opts["--val-tokens"], 0, INT64_MAX / 2);
  if (opts.count("--threads")) o.threads = int(to_int("--threads", opts["--threads"], 1, 1024));
  if (opts.count("--separator")) o.split = data::parse_separator(opts["--separator"]);
  ProgressBar bar;
  if (!quiet) o.on_progress = [&bar](const data::EncodeProgress& p) { bar(p); };

  const data::BpeTokenizer tokenizer = data::BpeTokenizer::load(opts["--tokenizer"]);
  const data::EncodeResult r = data::encode_corpus(o, data::text_encoder(tokenizer));

  const double mb = double(r.input_bytes) / 1e6;
  std::printf(
      "encoded %lld documents from %zu file(s) (%.2f MB) into %lld tokens in %.2f s: %.2f MB/s, %s tokens/s, "
      "%d thread(s)\n",
      static_cast<long long>(r.documents), r.files.size(), mb, static_cast<long long>(r.tokens), r.seconds,
      r.seconds > 0 ? mb / r.seconds : 0.0, format_count(r.seconds > 0 ? double(r.tokens) / r.seconds : 0).c_str(),
      r.threads);
  std::printf("tokenizer %s (vocab %d, <|endoftext|> = %u) | val %lld tokens, train %lld tokens | %s shards\n",
              tokenizer.origin().c_str(), tokenizer.vocab_size(), tokenizer.eot_id(),
              static_cast<long long>(r.val_tokens), static_cast<long long>(r.train_tokens),
              data::token_width_name(r.width));
  size_t name_w = 0;
  for (const data::EncodedShard& s : r.shards) name_w = std::max(name_w, s.file.size());
  for (const data::EncodedShard& s : r.shards)
    std::printf("  %s/%-*s  %-5s %11lld tokens  sha256 %.16s...\n", o.out_dir.c_str(), int(name_w), s.file.c_str(),
                s.split.c_str(), static_cast<long long>(s.tokens), s.sha256.c_str());
  std::printf("  %s\n", r.manifest_path.c_str());
  const std::string prefix = o.out_dir + "/" + r.name;
  if (r.train_tokens > 0)
    std::printf("train with: --set data.train=\"%s_train_*.bin\"", prefix.c_str());
  else
    std::printf("warning: every token went to the val split (--val-tokens %lld >= %lld tokens); no train shards",
                static_cast<long long>(o.val_tokens), static_cast<long long>(r.tokens));
  if (r.val_tokens > 0) std::printf(" --set data.val=\"%s_val_*.bin\"", prefix.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace tt
