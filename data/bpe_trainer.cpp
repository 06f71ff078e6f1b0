// Byte-level BPE trainer (see bpe_trainer.h): parallel piece counting over safe split points, then
// incremental-pair-count BPE with a lazily cleaned max-heap.
//
// Why a split point is safe for the GPT-2 pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (no anchors, no lookbehind, so a match at position p depends only on text[p..]):
//  * after '\n' when the bytes before and after it are printable ASCII (0x21..0x7e), as in "x\nT":
//    the '\n' is a piece of its own whether or not the text ends after it (a longer whitespace run
//    before it would not be: "  \n" at the end of a fragment is one piece, in "  \nT" two);
//  * before ' ' when the bytes around it are ASCII letters ("a b"): the piece holding the letter
//    ends at it (letter run or contraction), and " b..." starts a piece in both cases.
// So pretokenizing fragments cut there yields exactly the pieces of the whole text. The second rule
// bounds fragments even in text without newlines.
#include "data/bpe_trainer.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "data/bpe_tokenizer.h"
#include "data/pretokenizer.h"

namespace tt::data {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_jsonl_path(const std::string& path) { return ends_with(path, ".jsonl"); }

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A raw-text fragment may end at p (0 < p < size - 1): see the comment block at the top.
bool is_text_split(std::string_view s, size_t p) {
  auto graphic = [](char c) { return c >= 0x21 && c <= 0x7e; };
  if (s[p - 1] == '\n') return graphic(s[p]) && (p < 2 || graphic(s[p - 2]));
  return s[p] == ' ' && is_ascii_letter(s[p - 1]) && is_ascii_letter(s[p + 1]);
}

// First split point >= from (raw text: safe split; jsonl: after '\n'), or npos.
size_t find_split_forward(std::string_view s, size_t from, bool jsonl) {
  if (jsonl) {
    if (from == 0) from = 1;
    for (size_t p = from; p <= s.size(); ++p)
      if (s[p - 1] == '\n') return p;
    return std::string_view::npos;
  }
  for (size_t p = std::max<size_t>(from, 1); p + 1 < s.size(); ++p)
    if (is_text_split(s, p)) return p;
  return std::string_view::npos;
}

// Last split point in s, or npos.
size_t find_split_backward(std::string_view s, bool jsonl) {
  if (jsonl) {
    size_t nl = s.rfind('\n');
    return nl == std::string_view::npos ? nl : nl + 1;
  }
  for (size_t p = s.size() >= 2 ? s.size() - 2 : 0; p >= 1; --p)
    if (is_text_split(s, p)) return p;
  return std::string_view::npos;
}

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

struct Chunk {
  size_t begin = 0, end = 0;
  int64_t first_line = 0;  // jsonl: 1-based number of the chunk's first line
};

// Runs visit over the chunks of one block on `threads` workers. The error of the lowest failing
// chunk is rethrown, so the reported error does not depend on timing.
int64_t run_block(const std::string& path, bool jsonl, std::string_view block, const std::vector<Chunk>& chunks,
                  int threads, const std::function<void(int, std::string_view)>& visit) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<int64_t> text_bytes{0};
  std::mutex error_mutex;
  size_t error_chunk = SIZE_MAX;
  std::exception_ptr error;

  auto work = [&](int worker) {
    int64_t bytes = 0;
    for (size_t c; !failed.load(std::memory_order_relaxed) && (c = next.fetch_add(1)) < chunks.size();) {
      try {
        std::string_view text = block.substr(chunks[c].begin, chunks[c].end - chunks[c].begin);
        if (!jsonl) {
          visit(worker, text);
          bytes += static_cast<int64_t>(text.size());
          continue;
        }
        int64_t line_no = chunks[c].first_line;
        for (size_t pos = 0; pos < text.size(); ++line_no) {
          size_t nl = text.find('\n', pos);
          if (nl == std::string_view::npos) nl = text.size();
          std::string_view line = text.substr(pos, nl - pos);
          pos = nl + 1;
          if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
          if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
          const std::string where = str(path, ":", line_no);
          nlohmann::json doc;
          try {
            doc = nlohmann::json::parse(line.begin(), line.end());
          } catch (const nlohmann::json::exception& e) {
            throw Error(ErrorKind::kData, str("invalid JSON: ", e.what()), where,
                        "each line of a .jsonl file must be one JSON object with a \"text\" string");
          }
          auto it = doc.is_object() ? doc.find("text") : doc.end();
          if (!doc.is_object() || it == doc.end() || !it->is_string())
            throw Error(ErrorKind::kData, "line has no string field \"text\"", where,
                        "each line of a .jsonl file must be one JSON object with a \"text\" string");
          const std::string& s = it->get_ref<const std::string&>();
          visit(worker, s);
          bytes += static_cast<int64_t>(s.size());
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (c < error_chunk) {
          error_chunk = c;
          error = std::current_exception();
        }
        failed = true;
      }
    }
    text_bytes += bytes;
  };

  const int n = std::max(1, std::min<int>(threads, static_cast<int>(chunks.size())));
  std::vector<std::thread> pool;
  for (int w = 1; w < n; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return text_bytes.load();
}

// Cuts a block into chunks of about chunk_bytes at split points.
std::vector<Chunk> cut_chunks(std::string_view block, bool jsonl, size_t chunk_bytes, int64_t first_line) {
  std::vector<Chunk> chunks;
  size_t begin = 0;
  int64_t line = first_line;
  while (begin < block.size()) {
    size_t end = block.size();
    if (block.size() - begin > chunk_bytes) {
      size_t p = find_split_forward(block, begin + chunk_bytes, jsonl);
      if (p != std::string_view::npos) end = p;
    }
    chunks.push_back({begin, end, line});
    if (jsonl) line += std::count(block.begin() + begin, block.begin() + end, '\n');
    begin = end;
  }
  return chunks;
}

// Arena-backed piece -> count map: keys are copied once, lookups take a string_view.
class PieceCounter {
 public:
  void add(std::string_view piece) {
    auto it = counts_.find(piece);
    if (it != counts_.end()) {
      ++it->second;
      return;
    }
    counts_.emplace(store(piece), 1);
  }
  const std::unordered_map<std::string_view, int64_t>& counts() const { return counts_; }
  int64_t total = 0;
  int64_t bytes = 0;

 private:
  std::string_view store(std::string_view s) {
    if (s.size() > capacity_ - used_) {
      const size_t size = std::max<size_t>(s.size(), size_t(1) << 20);
      blocks_.emplace_back(new char[size]);
      capacity_ = size;
      used_ = 0;
    }
    char* dst = blocks_.back().get() + used_;
    std::memcpy(dst, s.data(), s.size());
    used_ += s.size();
    return {dst, s.size()};
  }

  std::unordered_map<std::string_view, int64_t> counts_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t capacity_ = 0, used_ = 0;
};

// ---- BPE merging --------------------------------------------------------------------------------

using PairKey = uint64_t;
PairKey pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
int32_t pair_left(PairKey k) { return static_cast<int32_t>(k >> 32); }
int32_t pair_right(PairKey k) { return static_cast<int32_t>(k & 0xffffffffu); }

struct HeapEntry {
  int64_t count;
  PairKey pair;
};

// Heap order: larger count first; equal counts -> lexicographically smaller (left, right) bytes first.
struct HeapLess {
  const std::vector<std::string>* bytes;
  bool operator()(const HeapEntry& x, const HeapEntry& y) const {
    if (x.count != y.count) return x.count < y.count;
    if (x.pair == y.pair) return false;
    const std::string& xl = (*bytes)[pair_left(x.pair)];
    const std::string& yl = (*bytes)[pair_left(y.pair)];
    if (int c = xl.compare(yl)) return c > 0;
    return (*bytes)[pair_right(x.pair)].compare((*bytes)[pair_right(y.pair)]) > 0;
  }
};

bool contains_pair(const std::vector<int32_t>& s, int32_t a, int32_t b) {
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] == a && s[i + 1] == b) return true;
  return false;
}

// Replaces the non-overlapping occurrences of (a, b), left to right, by ab.
void merge_in_word(std::vector<int32_t>& s, int32_t a, int32_t b, int32_t ab) {
  size_t out = 0;
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
      s[out++] = ab;
      i += 2;
    } else {
      s[out++] = s[i++];
    }
  }
  s.resize(out);
}

void validate_options(const BpeTrainerOptions& options) {
  const int min_vocab = 257 + static_cast<int>(options.special_tokens.size());
  if (options.vocab_size < min_vocab)
    throw Error(ErrorKind::kUsage, str("vocab size ", options.vocab_size, " is too small"), "--vocab-size",
                str("it must be at least ", min_vocab, " (256 byte tokens + ", options.special_tokens.size(),
                    " special token(s) + at least one merge)"));
  if (options.min_frequency < 1)
    throw Error(ErrorKind::kUsage, str("min frequency ", options.min_frequency, " must be >= 1"), "--min-frequency",
                "2 (the default) skips pairs seen only once");
  for (const auto& s : options.special_tokens)
    if (s.empty()) throw Error(ErrorKind::kUsage, "empty special token", "special tokens", "");
}

}  // namespace

std::vector<std::string> list_training_files(const std::vector<std::string>& inputs) {
  if (inputs.empty())
    throw Error(ErrorKind::kUsage, "no input given", "--input", "pass text files or directories with --input PATH");
  std::vector<std::string> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw Error(ErrorKind::kData, "input not found", in, "check the path given to --input");
    if (!fs::is_directory(st)) {
      files.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(in, fs::directory_options::follow_directory_symlink, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      const std::string p = it->path().string();
      if (ends_with(p, ".txt") || ends_with(p, ".jsonl")) found.push_back(p);
    }
    if (ec) throw Error(ErrorKind::kData, str("cannot list directory: ", ec.message()), in, "");
    if (found.empty())
      throw Error(ErrorKind::kData, "directory has no *.txt or *.jsonl files", in,
                  "training text is read from *.txt (raw) and *.jsonl (\"text\" field) files");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

int64_t scan_training_text(const std::vector<std::string>& files, const TextScanOptions& options,
                           const std::function<void(int, std::string_view)>& visit,
                           const std::function<void(int64_t, int64_t)>& progress) {
  TT_ASSERT(options.block_bytes > 0 && options.chunk_bytes > 0);
  const int threads = resolve_threads(options.threads);
  int64_t bytes_total = 0, bytes_done = 0, text_bytes = 0;
  for (const auto& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    if (!ec) bytes_total += static_cast<int64_t>(size);
  }
  for (const auto& path : files) {
    const bool jsonl = is_jsonl_path(path);
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file) throw Error(ErrorKind::kData, str("cannot open: ", std::strerror(errno)), path, "");
    std::string buffer;  // carried-over tail + newly read bytes
    int64_t first_line = 1;
    bool eof = false;
    while (!eof || !buffer.empty()) {
      // Fill up to block_bytes beyond the carry-over; grow while no split point is in sight.
      size_t want = options.block_bytes;
      size_t cut = std::string_view::npos;
      for (;;) {
        if (!eof) {
          const size_t old = buffer.size();
          buffer.resize(old + want);
          const size_t got = std::fread(&buffer[old], 1, want, file.get());
          buffer.resize(old + got);
          bytes_done += static_cast<int64_t>(got);
          if (got < want) {
            if (std::ferror(file.get()))
              throw Error(ErrorKind::kData, str("read error: ", std::strerror(errno)), path, "");
            eof = true;
          }
        }
        if (eof) {
          cut = buffer.size();
          break;
        }
        cut = find_split_backward(buffer, jsonl);
        if (cut != std::string_view::npos && cut > 0) break;
        want = std::max(want, buffer.size());  // no split point yet: read more
      }
      const std::string_view block(buffer.data(), cut);
      const std::vector<Chunk> chunks = cut_chunks(block, jsonl, options.chunk_bytes, first_line);
      text_bytes += run_block(path, jsonl, block, chunks, threads, visit);
      if (jsonl) first_line += std::count(block.begin(), block.end(), '\n');
      buffer.erase(0, cut);
      if (progress) progress(bytes_done, bytes_total);
    }
  }
  return text_bytes;
}

PieceCounts count_pieces(const std::vector<std::string>& files, const std::vector<std::string>& special_tokens,
                         const TextScanOptions& options, const BpeProgressFn& progress) {
  const int threads = resolve_threads(options.threads);
  const Pretokenizer pretokenizer;
  std::vector<PieceCounter> counters(threads);
  std::vector<std::vector<std::string_view>> piece_buffers(threads);

  auto count_text = [&](int worker, std::string_view text) {
    PieceCounter& counter = counters[worker];
    std::vector<std::string_view>& pieces = piece_buffers[worker];
    counter.bytes += static_cast<int64_t>(text.size());
    // Cut out special tokens: the text between them is pretokenized segment by segment.
    while (!text.empty()) {
      size_t cut = text.size(), skip = 0;
      for (const auto& special : special_tokens) {
        if (special.empty()) continue;
        const size_t at = text.find(special);
        if (at < cut || (at == cut && at != text.size() && special.size() > skip)) {
          cut = at;
          skip = special.size();
        }
      }
      pieces.clear();
      pretokenizer.split(text.substr(0, cut), pieces);
      for (std::string_view p : pieces) counter.add(p);
      counter.total += static_cast<int64_t>(pieces.size());
      text.remove_prefix(std::min(text.size(), cut + skip));
    }
  };

  BpeTrainProgress report;
  report.phase = BpeTrainProgress::Phase::kCounting;
  scan_training_text(files, options, count_text, [&](int64_t done, int64_t total) {
    if (!progress) return;
    report.bytes_done = done;
    report.bytes_total = total;
    progress(report);
  });

  // Sum the per-worker maps; sorting by bytes makes the result independent of who counted what.
  PieceCounts out;
  std::unordered_map<std::string_view, int64_t> merged;
  for (const auto& c : counters) {
    out.bytes_seen += c.bytes;
    out.total += c.total;
    if (merged.empty()) {
      merged = c.counts();
      continue;
    }
    for (const auto& [piece, n] : c.counts()) merged[piece] += n;
  }
  out.pieces.reserve(merged.size());
  for (const auto& [piece, n] : merged) out.pieces.emplace_back(std::string(piece), n);
  std::sort(out.pieces.begin(), out.pieces.end());
  return out;
}

BpeTrainResult train_bpe_on_counts(const PieceCounts& counts, const BpeTrainerOptions& options,
                                   const BpeProgressFn& progress) {
  validate_options(options);
  BpeTrainResult result;
  result.special_tokens = options.special_tokens;
  result.bytes_seen = counts.bytes_seen;
  result.pieces = counts.total;
  result.unique_pieces = static_cast<int64_t>(counts.pieces.size());

  std::vector<std::string>& bytes = result.token_bytes;
  std::unordered_map<std::string, int32_t> id_of;
  for (int i = 0; i < 256; ++i) {
    bytes.emplace_back(1, static_cast<char>(i));
    id_of.emplace(bytes.back(), i);
  }
  const size_t target_tokens = static_cast<size_t>(options.vocab_size) - options.special_tokens.size();
  const int64_t min_freq = options.min_frequency;

  // Words: the symbol sequence of each distinct piece, weighted by its count.
  std::vector<std::vector<int32_t>> words(counts.pieces.size());
  std::vector<int64_t> word_count(counts.pieces.size());
  std::unordered_map<PairKey, int64_t> pair_count;
  std::unordered_map<PairKey, std::vector<int32_t>> pair_words;  // may hold stale/duplicate word ids
  for (size_t w = 0; w < counts.pieces.size(); ++w) {
    const std::string& piece = counts.pieces[w].first;
    word_count[w] = counts.pieces[w].second;
    words[w].reserve(piece.size());
    for (unsigned char c : piece) words[w].push_back(c);
    for (size_t i = 0; i + 1 < piece.size(); ++i) {
      const PairKey k = pair_key(words[w][i], words[w][i + 1]);
      pair_count[k] += word_count[w];
      auto& list = pair_words[k];
      if (list.empty() || list.back() != static_cast<int32_t>(w)) list.push_back(static_cast<int32_t>(w));
    }
  }

  HeapLess less{&bytes};
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, HeapLess> heap(less);
  {
    std::vector<PairKey> keys;
    for (const auto& [k, n] : pair_count)
      if (n >= min_freq) keys.push_back(k);
    std::sort(keys.begin(), keys.end());  // push order must not depend on hash-map iteration order
    for (PairKey k : keys) heap.push({pair_count[k], k});
  }
  std::unordered_set<PairKey> merged_pairs;

  BpeTrainProgress report;
  report.phase = BpeTrainProgress::Phase::kMerging;
  report.merges_target = static_cast<int>(target_tokens - bytes.size());
  if (progress) progress(report);

  std::vector<std::pair<PairKey, int32_t>> deltas;  // per word: (pair, +-1 occurrences)
  std::vector<PairKey> raised;                      // pairs whose count went up this merge
  while (bytes.size() < target_tokens) {
    // Pop until the top entry is exact: entries above the live count are re-queued at it, entries
    // below it are leftovers of an earlier, lower count (a newer exact entry exists).
    bool found = false;
    HeapEntry top{};
    while (!heap.empty()) {
      top = heap.top();
      heap.pop();
      if (merged_pairs.count(top.pair)) continue;
      const int64_t live = pair_count[top.pair];
      if (live == top.count) {
        found = true;
        break;
      }
      if (live < top.count && live >= min_freq) heap.push({live, top.pair});
    }
    if (!found) break;

    const int32_t a = pair_left(top.pair), b = pair_right(top.pair);
    std::string joined = bytes[a] + bytes[b];
    result.merges.emplace_back(bytes[a], bytes[b]);
    merged_pairs.insert(top.pair);
    int32_t ab;
    if (auto it = id_of.find(joined); it != id_of.end()) {
      ab = it->second;
    } else {
      ab = static_cast<int32_t>(bytes.size());
      id_of.emplace(joined, ab);
      bytes.push_back(std::move(joined));
    }

    std::vector<int32_t> affected = std::move(pair_words[top.pair]);
    pair_words.erase(top.pair);
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
    raised.clear();
    for (int32_t w : affected) {
      std::vector<int32_t>& s = words[w];
      if (!contains_pair(s, a, b)) continue;
      deltas.clear();
      for (size_t i = 0; i + 1 < s.size(); ++i) deltas.emplace_back(pair_key(s[i], s[i + 1]), -1);
      merge_in_word(s, a, b, ab);
      for (size_t i = 0; i + 1 < s.size(); ++i) deltas.emplace_back(pair_key(s[i], s[i + 1]), +1);
      std::sort(deltas.begin(), deltas.end());
      for (size_t i = 0; i < deltas.size();) {
        const PairKey k = deltas[i].first;
        int64_t d = 0;
        for (; i < deltas.size() && deltas[i].first == k; ++i) d += deltas[i].second;
        if (d == 0) continue;
        pair_count[k] += d * word_count[w];
        if (d > 0) {
          raised.push_back(k);
          auto& list = pair_words[k];
          if (list.empty() || list.back() != w) list.push_back(w);
        }
      }
    }
    TT_ASSERT(pair_count[top.pair] == 0, "merged pair still counted ", pair_count[top.pair], " times");
    std::sort(raised.begin(), raised.end());
    raised.erase(std::unique(raised.begin(), raised.end()), raised.end());
    for (PairKey k : raised) {
      const int64_t n = pair_count[k];
      if (n >= min_freq && !merged_pairs.count(k)) heap.push({n, k});
    }

    ++report.merges_done;
    if (progress && (report.merges_done % 64 == 0)) progress(report);
  }
  if (progress) progress(report);
  return result;
}

BpeTrainResult train_bpe(const std::vector<std::string>& input_files, const BpeTrainerOptions& options,
                         const BpeProgressFn& progress) {
  validate_options(options);
  const std::vector<std::string> files = list_training_files(input_files);
  TextScanOptions scan;
  scan.threads = options.threads;
  const PieceCounts counts = count_pieces(files, options.special_tokens, scan, progress);
  if (counts.total == 0)
    throw Error(ErrorKind::kData, "the input holds no text to train on",
                files.size() == 1 ? files[0] : str(files.size(), " files"),
                "pass non-empty *.txt files or *.jsonl files with a \"text\" field");
  return train_bpe_on_counts(counts, options, progress);
}

void write_bpe_tokenizer(const std::string& dir, const BpeTrainResult& result) {
  // write_openai_tokenizer creates `dir` (core/fs.h ensure_dir) and writes both files atomically.
  write_openai_tokenizer(dir, result.token_bytes, result.merges, result.special_tokens);
}

}  // namespace tt::data
