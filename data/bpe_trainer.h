// Byte-level BPE training (GPT-2 style) for `topotrain data train-tokenizer`.
// Text is cut into pieces by the GPT-2 Pretokenizer and the pieces are counted; BPE then repeatedly
// merges the most frequent adjacent token pair inside the pieces, never across them.
//
// Design: two stages with a plain value between them. count_pieces() scans files in blocks cut at
// "safe" split points (where the GPT-2 pattern is known to end a piece), so chunks are pretokenized
// in parallel and the counts are exactly those of pretokenizing each file whole; per-thread counts
// are summed and sorted by bytes, so nothing downstream depends on the thread count or timing.
// train_bpe_on_counts() is a pure function of those counts: pair counts are updated incrementally
// (pair -> count, pair -> words containing it, a max-heap with lazy deletion), so a merge costs
// time proportional to the words it touches, not to the corpus. Ties between pairs of equal count
// go to the pair whose (left bytes, right bytes) is lexicographically smallest. Defensively, should
// a merge yield bytes that are already a token (("ab","c") after ("a","bc")), the merge is recorded
// and the existing id reused, so token bytes stay unique (encoder.json maps bytes -> id); merges
// could then outnumber the learned tokens. A merged pair is never merged again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tt::data {

struct BpeTrainerOptions {
  int vocab_size = 0;     // total, special tokens included; at least 257 + #special_tokens
  int min_frequency = 2;  // a pair seen fewer times (weighted by piece counts) is never merged
  int threads = 0;        // threads for reading/pretokenizing; 0 = std::thread::hardware_concurrency()
  // Appended after the learned tokens (the last ids). Their literal text in the training data is
  // cut out before pretokenizing (a document separator), so it never feeds merges.
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
};

struct BpeTrainResult {
  std::vector<std::string> token_bytes;  // id -> raw bytes: ids 0..255 are byte i, then one per learned token
  std::vector<std::pair<std::string, std::string>> merges;  // raw bytes, rank order
  std::vector<std::string> special_tokens;                  // ids token_bytes.size() + i
  int64_t bytes_seen = 0;                                   // text bytes pretokenized (jsonl: the "text" fields)
  int64_t pieces = 0;                                       // pretokenized pieces, with multiplicity
  int64_t unique_pieces = 0;                                // distinct pieces

  int vocab_size() const { return static_cast<int>(token_bytes.size() + special_tokens.size()); }
};

// Progress of train_bpe(); the callback runs on the calling thread, between units of work.
struct BpeTrainProgress {
  enum class Phase { kCounting, kMerging };
  Phase phase = Phase::kCounting;
  int64_t bytes_done = 0, bytes_total = 0;  // kCounting: file bytes read so far / in all files
  int merges_done = 0, merges_target = 0;   // kMerging: merges so far / the most that fit the vocabulary
};
using BpeProgressFn = std::function<void(const BpeTrainProgress&)>;

// Distinct pretokenized pieces with their counts, sorted by bytes.
struct PieceCounts {
  std::vector<std::pair<std::string, int64_t>> pieces;
  int64_t bytes_seen = 0;
  int64_t total = 0;  // sum of the counts
};

struct TextScanOptions {
  int threads = 0;                         // 0 = hardware concurrency
  size_t block_bytes = size_t(8) << 20;    // read granularity (progress is reported per block)
  size_t chunk_bytes = size_t(256) << 10;  // unit of parallel work inside a block
};

// Expands inputs into the training files: a file is taken as is (any extension); a directory
// contributes every *.txt and *.jsonl below it, recursively, sorted by path. Throws kData for a
// missing path or a directory without such files, and kUsage when `inputs` is empty.
std::vector<std::string> list_training_files(const std::vector<std::string>& inputs);

// Calls visit(worker, text) for every piece of training text in `files`, concurrently from
// `threads` workers (worker in [0, threads)). A *.jsonl file yields the "text" field of each
// non-empty line (one call per document; a line that is not an object with a string "text" is a
// kData error naming file:line); any other file is read as raw text and yields fragments cut at
// safe split points (pretokenizing the fragments gives exactly the pieces of the whole file).
// progress(bytes_done, bytes_total) runs on the calling thread after each block. An exception in a
// worker stops the scan and is rethrown to the caller. Returns the text bytes visited.
int64_t scan_training_text(const std::vector<std::string>& files, const TextScanOptions& options,
                           const std::function<void(int worker, std::string_view text)>& visit,
                           const std::function<void(int64_t bytes_done, int64_t bytes_total)>& progress = {});

// Counts the pretokenized pieces of `files` (as listed by list_training_files), with special-token
// strings cut out first. Identical output for every thread count and block/chunk size.
PieceCounts count_pieces(const std::vector<std::string>& files, const std::vector<std::string>& special_tokens,
                         const TextScanOptions& options, const BpeProgressFn& progress = {});

// The BPE merges for given piece counts (pure; single-threaded). Stops when the vocabulary
// (special tokens included) reaches options.vocab_size or no unmerged pair has min_frequency.
// Throws kUsage when vocab_size < 257 + #special_tokens or min_frequency < 1.
BpeTrainResult train_bpe_on_counts(const PieceCounts& counts, const BpeTrainerOptions& options,
                                   const BpeProgressFn& progress = {});

// count_pieces + train_bpe_on_counts over list_training_files(input_files). Throws kData when the
// input holds no text.
BpeTrainResult train_bpe(const std::vector<std::string>& input_files, const BpeTrainerOptions& options,
                         const BpeProgressFn& progress = {});

// Writes dir/encoder.json and dir/vocab.bpe (GPT-2 / OpenAI format) for a trained result.
void write_bpe_tokenizer(const std::string& dir, const BpeTrainResult& result);

}  // namespace tt::data
