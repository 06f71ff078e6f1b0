// `topotrain data train-tokenizer`: trains a byte-level BPE tokenizer (data/bpe_trainer.h) on text
// files and writes it in GPT-2/OpenAI format (DIR/encoder.json + DIR/vocab.bpe).
// Decision: the summary measures the written files, not the trainer's internal state: it reloads
// DIR with BpeTokenizer::load and encodes the training text with it, so the tokens/byte it prints
// is what `data encode` and training will see.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/bpe_tokenizer.h"
#include "data/bpe_trainer.h"
#include "launch/args.h"

namespace tt {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr double kMB = 1e6;
// The tokens/byte report encodes at most this much training text (whole files, in order).
constexpr int64_t kEvalBytes = int64_t(256) << 20;

// Prints counting and merging progress at most once a second (plus the final state of each phase).
class ProgressPrinter {
 public:
  void operator()(const data::BpeTrainProgress& p) {
    using Phase = data::BpeTrainProgress::Phase;
    const bool done = p.phase == Phase::kCounting ? p.bytes_done >= p.bytes_total : p.merges_done >= p.merges_target;
    if (p.phase == Phase::kMerging && !merging_) {
      merging_ = true;
      count_seconds_ = seconds_since(start_);
      merge_start_ = Clock::now();
      last_ = Clock::time_point();
    }
    const auto now = Clock::now();
    if (!done && (now - last_ < std::chrono::seconds(1) || (p.phase == Phase::kMerging && p.merges_done == 0))) return;
    if (done && (p.phase == Phase::kCounting ? printed_count_done_ : printed_merge_done_)) return;
    last_ = now;
    if (p.phase == Phase::kCounting) {
      printed_count_done_ = done;
      const double t = seconds_since(start_);
      std::printf("counting pieces: %.1f / %.1f MB (%.0f%%), %.1f MB/s\n", p.bytes_done / kMB, p.bytes_total / kMB,
                  p.bytes_total ? 100.0 * p.bytes_done / p.bytes_total : 100.0, t > 0 ? p.bytes_done / kMB / t : 0.0);
    } else {
      printed_merge_done_ = done;
      const double t = seconds_since(merge_start_);
      const double eta = p.merges_done > 0 ? t * (p.merges_target - p.merges_done) / p.merges_done : 0.0;
      std::printf("merging: %d / %d merges, %.1f s, ETA %.1f s\n", p.merges_done, p.merges_target, t, eta);
    }
    std::fflush(stdout);
  }
  double count_seconds() const { return count_seconds_; }
  double merge_seconds() const { return seconds_since(merge_start_); }

 private:
  Clock::time_point start_ = Clock::now(), merge_start_ = Clock::now(), last_;
  bool merging_ = false, printed_count_done_ = false, printed_merge_done_ = false;
  double count_seconds_ = 0;
};

}  // namespace

int train_tokenizer_command(const std::vector<std::string>& args) {
  const std::string command = "topotrain data train-tokenizer";
  ArgParser p(command,
              "Train a byte-level BPE tokenizer (GPT-2 pre-tokenization, <|endoftext|> as the last id) on\n"
              "text and write DIR/encoder.json + DIR/vocab.bpe. Inputs are files (*.jsonl: the \"text\"\n"
              "field of each line; anything else: raw text) or directories (every *.txt and *.jsonl\n"
              "below them, sorted). The result is the same for any --threads.");
  p.repeated("--input", "PATH", "training text: a file or a directory; more PATHs may follow")
      .option("--vocab-size", "N", "vocabulary size, <|endoftext|> included (>= 258)", "", true)
      .option("--out", "DIR", "output directory (created if missing)", "", true)
      .option("--min-frequency", "N", "never merge a pair seen fewer times", "2")
      .option("--threads", "N", "threads for reading and pre-tokenizing; 0 = all cores", "0")
      .positional("PATH...", "more inputs, as for --input", false);
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (!p.parse(rest)) return 0;

  std::vector<std::string> inputs = p.get_all("--input");
  inputs.insert(inputs.end(), p.positionals().begin(), p.positionals().end());
  if (inputs.empty())
    throw Error(ErrorKind::kUsage, "no input given", command,
                "pass training text with --input PATH (files or directories)");
  data::BpeTrainerOptions options;
  options.vocab_size = p.get_int("--vocab-size");
  options.min_frequency = p.get_int("--min-frequency");
  options.threads = p.get_int("--threads");
  if (options.threads < 0)
    throw Error(ErrorKind::kUsage, str("--threads ", options.threads, " is negative"), command, "use 0 for all cores");
  const std::string out = p.get("--out");
  if (out.empty()) throw Error(ErrorKind::kUsage, "--out is empty", command, "give an output directory");

  const auto start = Clock::now();
  ProgressPrinter printer;
  const data::BpeTrainResult result =
      data::train_bpe(inputs, options, [&](const data::BpeTrainProgress& pr) { printer(pr); });
  const std::vector<std::string> files = data::list_training_files(inputs);
  const double count_s = printer.count_seconds(), merge_s = printer.merge_seconds();
  data::write_bpe_tokenizer(out, result);
  const double train_s = seconds_since(start);

  // Measure the written tokenizer on (up to kEvalBytes of) the training text.
  const auto eval_start = Clock::now();
  const data::BpeTokenizer tokenizer = data::BpeTokenizer::load(out);
  std::vector<std::string> eval_files;
  int64_t eval_file_bytes = 0;
  for (const auto& f : files) {
    if (!eval_files.empty() && eval_file_bytes >= kEvalBytes) break;
    eval_files.push_back(f);
    std::error_code ec;
    eval_file_bytes += static_cast<int64_t>(std::filesystem::file_size(f, ec));
  }
  data::TextScanOptions scan;
  scan.threads = options.threads;
  std::atomic<int64_t> tokens{0};
  const int64_t eval_bytes = data::scan_training_text(eval_files, scan, [&](int, std::string_view text) {
    std::vector<uint32_t> ids;
    tokenizer.encode(text, ids);
    tokens += static_cast<int64_t>(ids.size());
  });
  const double eval_s = seconds_since(eval_start);

  const int learned = static_cast<int>(result.token_bytes.size()) - 256;
  std::printf("wrote %s/encoder.json and %s/vocab.bpe\n", out.c_str(), out.c_str());
  std::printf("vocab: %d tokens = 256 bytes + %d learned + %zu special", tokenizer.vocab_size(), learned,
              result.special_tokens.size());
  for (size_t i = 0; i < result.special_tokens.size(); ++i)
    std::printf("%s%s=%zu", i ? ", " : " (", result.special_tokens[i].c_str(), result.token_bytes.size() + i);
  std::printf("%s; %zu merges\n", result.special_tokens.empty() ? "" : ")", result.merges.size());
  if (result.vocab_size() < options.vocab_size)
    std::printf("note: stopped below --vocab-size %d: no remaining pair occurs %d times or more\n", options.vocab_size,
                options.min_frequency);
  std::printf("input: %zu file(s), %.2f MB of text, %lld pieces (%lld distinct)\n", files.size(),
              result.bytes_seen / kMB, static_cast<long long>(result.pieces),
              static_cast<long long>(result.unique_pieces));
  std::printf("time: %.2f s (counting %.2f s, merging %.2f s, writing %.2f s)\n", train_s, count_s, merge_s,
              std::max(0.0, train_s - count_s - merge_s));
  const int64_t n_tokens = tokens.load();
  std::printf("training text%s: %lld tokens for %lld bytes = %.4f tokens/byte (%.3f bytes/token), encoded in %.2f s\n",
              eval_files.size() < files.size() ? str(" (first ", eval_files.size(), " files)").c_str() : "",
              static_cast<long long>(n_tokens), static_cast<long long>(eval_bytes),
              eval_bytes ? double(n_tokens) / eval_bytes : 0.0, n_tokens ? double(eval_bytes) / n_tokens : 0.0, eval_s);
  return 0;
}

}  // namespace tt
