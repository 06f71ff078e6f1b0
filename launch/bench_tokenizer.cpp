// `topotrain bench tokenizer`: GPT-2 BPE encode throughput on a text file, single- and
// multi-threaded, printed as a table (benchmarks print; tests never assert speed).
// Design: for threads the file is cut into ~1 MB chunks at "safe" line breaks — a '\n' with an ASCII
// non-space byte on both sides. Pre-tokenization always ends a piece there and never looks behind,
// so encoding the chunks and concatenating gives exactly the ids of encoding the whole file; with
// --threads 1 the benchmark also encodes the file as one text and checks that.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "data/bpe_tokenizer.h"
#include "launch/args.h"
#include "launch/tokenizer_command.h"

namespace tt {

namespace {

constexpr size_t kChunkBytes = 1 << 20;

bool ascii_non_space(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u < 0x80 && !(u == ' ' || (u >= '\t' && u <= '\r'));
}

// Chunk boundaries (offsets, first 0, last text.size()) at safe line breaks about kChunkBytes apart.
std::vector<size_t> chunk_offsets(const std::string& text) {
  std::vector<size_t> cuts{0};
  size_t pos = kChunkBytes;
  while (pos < text.size()) {
    size_t i = pos;
    while (i < text.size() &&
           !(text[i - 1] == '\n' && i >= 2 && ascii_non_space(text[i - 2]) && ascii_non_space(text[i])))
      ++i;
    if (i >= text.size()) break;
    cuts.push_back(i);
    pos = i + kChunkBytes;
  }
  cuts.push_back(text.size());
  return cuts;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int bench_tokenizer(const Args& args) {
  ArgParser p("topotrain bench tokenizer",
              "Times GPT-2 BPE encoding of a text file (no special tokens). The file is cut into ~1 MB chunks\n"
              "at line breaks with a non-space byte on both sides, which leaves the ids unchanged; threads\n"
              "encode chunks in parallel. With --threads 1 the whole file is also encoded as one text, and\n"
              "the two results are compared.");
  p.option("--tokenizer", "DIR", "encoder.json + vocab.bpe, or tokenizer.json", "", true)
      .option("--input", "FILE", "text file to encode", "", true)
      .option("--threads", "N", "encoding threads", "1")
      .option("--repeat", "N", "timed repetitions (the best is reported)", "3");
  if (!p.parse(args)) return 0;
  const int threads = p.get_int("--threads"), repeat = p.get_int("--repeat");
  if (threads < 1 || repeat < 1)
    throw Error(ErrorKind::kUsage, "--threads and --repeat must be >= 1", "topotrain bench tokenizer");

  auto t0 = std::chrono::steady_clock::now();
  const data::BpeTokenizer tok = data::BpeTokenizer::load(p.get("--tokenizer"));
  const double load_s = seconds_since(t0);
  const std::string text = read_file_to_string(p.get("--input"), ErrorKind::kData);
  const std::vector<size_t> cuts = chunk_offsets(text);
  const size_t num_chunks = cuts.size() - 1;
  std::printf(
      "bench tokenizer | %s (vocab %d, loaded in %.3f s) | %s: %zu bytes, %zu chunks of ~1 MB at safe line "
      "breaks\n",
      tok.origin().c_str(), tok.vocab_size(), load_s, p.get("--input").c_str(), text.size(), num_chunks);
  std::printf("%-8s %8s %12s %10s %9s %9s %12s\n", "mode", "threads", "bytes", "tokens", "seconds", "MB/s", "tokens/s");
  auto row = [&](const char* mode, int n_threads, size_t tokens, double secs) {
    std::printf("%-8s %8d %12zu %10zu %9.4f %9.2f %12.0f\n", mode, n_threads, text.size(), tokens, secs,
                text.size() / secs / 1e6, tokens / secs);
  };

  std::vector<std::vector<uint32_t>> chunk_ids(num_chunks);
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    for (auto& v : chunk_ids) v.clear();
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t c; (c = next.fetch_add(1)) < num_chunks;)
        tok.encode(std::string_view(text).substr(cuts[c], cuts[c + 1] - cuts[c]), chunk_ids[c]);
    };
    t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    best = std::min(best, seconds_since(t0));
  }
  size_t tokens = 0;
  for (const auto& v : chunk_ids) tokens += v.size();
  row("chunks", threads, tokens, best);

  if (threads == 1) {
    std::vector<uint32_t> whole;
    double best_whole = 1e300;
    for (int r = 0; r < repeat; ++r) {
      whole.clear();
      t0 = std::chrono::steady_clock::now();
      tok.encode(text, whole);
      best_whole = std::min(best_whole, seconds_since(t0));
    }
    row("whole", 1, whole.size(), best_whole);
    std::vector<uint32_t> joined;
    joined.reserve(tokens);
    for (const auto& v : chunk_ids) joined.insert(joined.end(), v.begin(), v.end());
    const bool same = joined == whole;
    std::printf("chunked ids %s the whole-file ids\n", same ? "equal" : "DIFFER FROM");
    if (!same) throw Error(ErrorKind::kInternal, "chunked and whole-file encodings differ", p.get("--input"));
  }
  return 0;
}

}  // namespace tt
