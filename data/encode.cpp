// Text -> llm.c shards (see encode.h): input discovery, document splitting, the ordered
// parallel tokenizing pipeline, shard cutting and the manifest.
// Decision: work units are cut by the reader from the input alone and consumed in submission order
// through a bounded window (a few units per thread), so memory stays bounded, the output does not
// depend on scheduling, and the first error (in input order) is the one reported.
#include "data/encode.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "data/bpe_tokenizer.h"

namespace tt::data {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TextEncoder text_encoder(const BpeTokenizer& tokenizer) {
  TextEncoder e;
  e.encode = [tok = tokenizer](std::string_view text, std::vector<uint32_t>& out) { tok.encode(text, out); };
  e.vocab_size = tokenizer.vocab_size();
  e.eot_id = tokenizer.eot_id();
  e.origin = tokenizer.origin();
  e.chunkable = true;
  return e;
}

// ---- documents -------------------------------------------------------------------------------

DocumentSplit parse_separator(const std::string& spec) {
  DocumentSplit s;
  if (spec.empty()) return s;
  if (spec == "blankline" || spec == "blank-line" || spec == "\\n\\n+") {
    s.kind = DocumentSplit::Kind::kBlankLines;
    return s;
  }
  s.kind = DocumentSplit::Kind::kLiteral;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] != '\\') {
      s.literal += spec[i];
      continue;
    }
    const char c = i + 1 < spec.size() ? spec[++i] : '\0';
    switch (c) {
      case 'n':
        s.literal += '\n';
        break;
      case 'r':
        s.literal += '\r';
        break;
      case 't':
        s.literal += '\t';
        break;
      case '\\':
        s.literal += '\\';
        break;
      default:
        throw Error(ErrorKind::kUsage, str("unknown escape in separator '", spec, "'"), "--separator",
                    "use \\n, \\r, \\t or \\\\, or 'blankline' to split at blank lines");
    }
  }
  return s;
}

namespace {

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; });
}

// Printable ASCII other than space: a byte that is never (part of) whitespace.
bool is_solid(char c) { return c > 0x20 && c < 0x7f; }

}  // namespace

std::vector<std::string_view> split_documents(std::string_view text, const DocumentSplit& split) {
  std::vector<std::string_view> docs;
  auto add = [&](std::string_view d) {
    if (!d.empty()) docs.push_back(d);
  };
  switch (split.kind) {
    case DocumentSplit::Kind::kWholeFile:
      add(text);
      break;
    case DocumentSplit::Kind::kLiteral: {
      size_t pos = 0;
      for (;;) {
        const size_t hit = text.find(split.literal, pos);
        if (hit == std::string_view::npos) break;
        add(text.substr(pos, hit - pos));
        pos = hit + split.literal.size();
      }
      add(text.substr(pos));
      break;
    }
    case DocumentSplit::Kind::kBlankLines: {
      // A document is a maximal run of non-blank lines, including the '\n' after its last line.
      size_t pos = 0, doc_begin = std::string_view::npos, doc_end = 0;
      while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        const size_t line_end = nl == std::string_view::npos ? text.size() : nl;
        const size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
        if (is_blank(text.substr(pos, line_end - pos))) {
          if (doc_begin != std::string_view::npos) add(text.substr(doc_begin, doc_end - doc_begin));
          doc_begin = std::string_view::npos;
        } else {
          if (doc_begin == std::string_view::npos) doc_begin = pos;
          doc_end = next;
        }
        pos = next;
      }
      if (doc_begin != std::string_view::npos) add(text.substr(doc_begin, doc_end - doc_begin));
      break;
    }
  }
  return docs;
}

std::vector<std::string_view> chunk_document(std::string_view doc, size_t target_bytes) {
  std::vector<std::string_view> pieces;
  size_t begin = 0;
  if (target_bytes == 0) target_bytes = 1;
  while (doc.size() - begin > target_bytes) {
    size_t cut = std::string_view::npos;
    for (size_t nl = doc.find('\n', begin + target_bytes - 1); nl != std::string_view::npos;
         nl = doc.find('\n', nl + 1)) {
      if (nl > begin && nl + 1 < doc.size() && is_solid(doc[nl - 1]) && is_solid(doc[nl + 1])) {
        cut = nl + 1;
        break;
      }
    }
    if (cut == std::string_view::npos) break;
    pieces.push_back(doc.substr(begin, cut - begin));
    begin = cut;
  }
  pieces.push_back(doc.substr(begin));
  return pieces;
}

// ---- inputs ----------------------------------------------------------------------------------

namespace {

bool has_suffix(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
bool is_jsonl(const std::string& path) { return has_suffix(path, ".jsonl"); }

[[noreturn]] void throw_unreadable(const std::string& path, int err) {
  throw Error(ErrorKind::kData, "cannot read input: " + std::string(std::strerror(err)), path,
              err == ENOENT ? "the file is gone: was it moved or deleted while encoding? check the --input paths"
                            : "check the file's permissions");
}

}  // namespace

std::vector<std::string> collect_input_files(const std::vector<std::string>& inputs) {
  if (inputs.empty())
    throw Error(ErrorKind::kConfig, "no inputs given", "data encode", "pass --input FILE|DIR (repeatable)");
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw Error(ErrorKind::kData, "input does not exist", in, "check the --input path");
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      fs::recursive_directory_iterator it(in, ec), end;
      if (ec) throw Error(ErrorKind::kData, "cannot list directory: " + ec.message(), in, "check its permissions");
      for (; it != end; it.increment(ec)) {
        if (ec) throw Error(ErrorKind::kData, "cannot list directory: " + ec.message(), in, "check its permissions");
        const std::string p = it->path().string();
        if ((has_suffix(p, ".txt") || has_suffix(p, ".jsonl")) && it->is_regular_file(ec)) found.push_back(p);
      }
      if (found.empty())
        throw Error(ErrorKind::kData, "directory holds no *.txt or *.jsonl files", in,
                    "point --input at text (*.txt) or JSONL (*.jsonl) files, or a directory containing them");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

// ---- the pipeline ----------------------------------------------------------------------------

namespace {

// A slice of input: pieces of text, each maybe preceded by the end-of-text token. For JSONL units
// the pieces are raw lines, parsed by the worker (so parsing scales with the threads too).
struct Unit {
  bool jsonl = false;
  const std::string* file = nullptr;
  std::string text;
  std::vector<size_t> ends;    // end offset of each piece in text
  std::vector<char> eot;       // piece starts a document
  std::vector<int64_t> lines;  // jsonl: 1-based line number of each piece
  uint64_t input_bytes = 0;    // input bytes this unit accounts for (progress)

  void add(std::string_view piece, bool starts_doc, int64_t line = 0) {
    text.append(piece.data(), piece.size());
    ends.push_back(text.size());
    eot.push_back(starts_doc ? 1 : 0);
    if (jsonl) lines.push_back(line);
  }
  bool empty() const { return ends.empty(); }
};

struct Task {
  Unit unit;
  std::vector<uint32_t> tokens;
  int64_t documents = 0;
  std::exception_ptr error;
  bool done = false;
};

void run_task(Task& task, const TextEncoder& enc) {
  const Unit& u = task.unit;
  size_t begin = 0;
  for (size_t i = 0; i < u.ends.size(); ++i) {
    std::string_view piece(u.text.data() + begin, u.ends[i] - begin);
    begin = u.ends[i];
    if (u.jsonl) {
      const std::string where = str(*u.file, ":", u.lines[i]);
      const char* hint = "each line must be one JSON object with a string \"text\" field (JSON Lines)";
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(piece);
      } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::kData, str("malformed JSON: ", e.what()), where, hint);
      }
      if (!j.is_object()) throw Error(ErrorKind::kData, "line is not a JSON object", where, hint);
      auto it = j.find("text");
      if (it == j.end()) throw Error(ErrorKind::kData, "JSON object has no \"text\" field", where, hint);
      if (!it->is_string()) throw Error(ErrorKind::kData, "\"text\" field is not a string", where, hint);
      const std::string& text = it->get_ref<const std::string&>();
      if (text.empty()) continue;
      task.tokens.push_back(enc.eot_id);
      ++task.documents;
      enc.encode(text, task.tokens);
    } else {
      if (u.eot[i]) {
        task.tokens.push_back(enc.eot_id);
        ++task.documents;
      }
      enc.encode(piece, task.tokens);
    }
  }
}

// Tokenizes tasks on `threads` workers (inline when threads <= 1); the owner consumes them in
// submission order. The destructor stops and joins the workers, dropping unfinished tasks.
class OrderedPool {
 public:
  OrderedPool(const TextEncoder& enc, int threads) : enc_(enc), max_in_flight_(threads <= 1 ? 1 : 3 * size_t(threads)) {
    if (threads > 1)
      for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~OrderedPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    queue_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  // Queues a unit; consumes finished tasks (in order) while the window is full.
  template <typename Consume>
  void submit(Unit unit, Consume&& consume) {
    auto task = std::make_shared<Task>();
    task->unit = std::move(unit);
    pending_.push_back(task);
    if (workers_.empty()) {
      execute(*task);
    } else {
      {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(task);
      }
      queue_cv_.notify_one();
    }
    while (pending_.size() >= max_in_flight_) consume_front(consume);
  }
  template <typename Consume>
  void drain(Consume&& consume) {
    while (!pending_.empty()) consume_front(consume);
  }

 private:
  void execute(Task& task) {
    try {
      run_task(task, enc_);
    } catch (...) {
      task.error = std::current_exception();
    }
  }
  template <typename Consume>
  void consume_front(Consume& consume) {
    std::shared_ptr<Task> task = pending_.front();
    if (!workers_.empty()) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [&] { return task->done; });
    }
    pending_.pop_front();
    if (task->error) std::rethrow_exception(task->error);
    consume(*task);
  }
  void work() {
    for (;;) {
      std::shared_ptr<Task> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        queue_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      execute(*task);
      {
        std::lock_guard<std::mutex> lock(mu_);
        task->done = true;
      }
      done_cv_.notify_all();
    }
  }

  const TextEncoder& enc_;
  const size_t max_in_flight_;
  std::deque<std::shared_ptr<Task>> pending_;  // owner thread only, submission order
  std::mutex mu_;
  std::condition_variable queue_cv_, done_cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// Cuts the token stream into val then train shards and writes them; remembers what it wrote so a
// failed run can remove it.
class ShardSink {
 public:
  ShardSink(std::string dir, std::string name, TokenWidth width, int64_t shard_tokens, int64_t val_tokens)
      : dir_(std::move(dir)),
        name_(std::move(name)),
        width_(width),
        shard_tokens_(shard_tokens),
        val_left_(val_tokens),
        in_val_(val_tokens > 0) {}
  ~ShardSink() {
    if (!committed_)
      for (const EncodedShard& s : shards_) std::remove((dir_ + "/" + s.file).c_str());
  }

  void append(const std::vector<uint32_t>& tokens) {
    size_t i = 0;
    while (i < tokens.size()) {
      const int64_t cap = capacity();
      const size_t take = std::min(tokens.size() - i, size_t(cap - int64_t(buffer_.size())));
      buffer_.insert(buffer_.end(), tokens.begin() + i, tokens.begin() + i + take);
      i += take;
      if (int64_t(buffer_.size()) == cap) flush();
    }
  }
  void finish() {
    if (!buffer_.empty()) flush();
  }
  void commit() { committed_ = true; }
  const std::vector<EncodedShard>& shards() const { return shards_; }
  int64_t val_tokens() const { return val_written_; }
  int64_t train_tokens() const { return train_written_; }

 private:
  int64_t capacity() const { return in_val_ ? std::min(shard_tokens_, val_left_) : shard_tokens_; }
  void flush() {
    char index[16];
    std::snprintf(index, sizeof index, "%06d", int(shards_.size()));
    EncodedShard s;
    s.split = in_val_ ? "val" : "train";
    s.file = name_ + "_" + s.split + "_" + index + ".bin";
    s.tokens = int64_t(buffer_.size());
    const std::string path = dir_ + "/" + s.file;
    write_shard(path, buffer_, width_);
    shards_.push_back(s);  // before hashing: a failure below still removes the file
    shards_.back().sha256 = file_sha256(path);
    shards_.back().bytes = kShardHeaderBytes + uint64_t(s.tokens) * token_width_bytes(width_);
    if (in_val_) {
      val_written_ += s.tokens;
      val_left_ -= s.tokens;
      if (val_left_ == 0) in_val_ = false;
    } else {
      train_written_ += s.tokens;
    }
    buffer_.clear();
  }

  std::string dir_, name_;
  TokenWidth width_;
  int64_t shard_tokens_, val_left_;
  bool in_val_;
  bool committed_ = false;
  std::vector<uint32_t> buffer_;
  std::vector<EncodedShard> shards_;
  int64_t val_written_ = 0, train_written_ = 0;
};

std::string default_name(const std::string& out_dir) {
  std::string d = out_dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  std::string base = fs::path(d).filename().string();
  if (base.empty() || base == "." || base == ".." || base == "/") return "data";
  return base;
}

// Refuses an out_dir that already holds this data set (or any manifest): mixing shards of two runs
// would silently feed stale data to the loader.
void check_fresh_output(const std::string& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<std::string> clash;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string f = entry.path().filename().string();
    if (f == kEncodeManifestName ||
        ((f.rfind(name + "_train_", 0) == 0 || f.rfind(name + "_val_", 0) == 0) && has_suffix(f, ".bin")))
      clash.push_back(f);
  }
  if (!clash.empty()) {
    std::sort(clash.begin(), clash.end());
    throw Error(ErrorKind::kConfig,
                str("output directory already holds an encoded data set (", clash.front(),
                    clash.size() > 1 ? str(" and ", clash.size() - 1, " more") : std::string(), ")"),
                dir, "remove those files or choose another --out; shards of two runs must not mix");
  }
}

// Streams one input file into units.
template <typename Emit>
void read_text_file(const std::string& path, const EncodeOptions& opt, bool chunkable, Unit& unit, Emit&& emit) {
  std::string content;
  {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw_unreadable(path, errno);
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) content.append(buf, n);
    const bool bad = std::ferror(f);
    const int err = errno;
    std::fclose(f);
    if (bad) throw_unreadable(path, err);
  }
  uint64_t accounted = 0;
  for (std::string_view doc : split_documents(content, opt.split)) {
    std::vector<std::string_view> pieces =
        chunkable ? chunk_document(doc, opt.unit_bytes) : std::vector<std::string_view>{doc};
    for (size_t k = 0; k < pieces.size(); ++k) {
      unit.add(pieces[k], k == 0);
      unit.input_bytes += pieces[k].size();
      accounted += pieces[k].size();
      if (unit.text.size() >= opt.unit_bytes) emit();
    }
  }
  unit.input_bytes += content.size() - accounted;  // separators and blank lines
}

template <typename Emit>
void read_jsonl_file(const std::string& path, const EncodeOptions& opt, Unit& unit, Emit&& emit) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw_unreadable(path, errno);
  std::unique_ptr<FILE, int (*)(FILE*)> guard(f, &std::fclose);
  struct LineBuffer {
    char* data = nullptr;
    size_t cap = 0;
    ~LineBuffer() { std::free(data); }
  } line;
  int64_t lineno = 0;
  for (;;) {
    errno = 0;
    const ssize_t n = ::getline(&line.data, &line.cap, f);
    if (n < 0) {
      if (std::ferror(f)) throw_unreadable(path, errno ? errno : EIO);
      break;
    }
    ++lineno;
    unit.input_bytes += uint64_t(n);
    std::string_view sv(line.data, size_t(n));
    if (is_blank(sv.substr(0, sv.size() - (sv.size() && sv.back() == '\n' ? 1 : 0)))) continue;
    unit.add(sv, true, lineno);
    if (unit.text.size() >= opt.unit_bytes) emit();
  }
}

}  // namespace

EncodeResult encode_corpus(const EncodeOptions& opt, const TextEncoder& enc) {
  const auto start = Clock::now();
  if (!enc.encode) throw Error(ErrorKind::kConfig, "no tokenizer", "data encode");
  if (enc.vocab_size < 1 || enc.vocab_size > (int64_t(1) << 32))
    throw Error(ErrorKind::kConfig, str("tokenizer vocab size ", enc.vocab_size, " is out of range"), enc.origin);
  if (int64_t(enc.eot_id) >= enc.vocab_size)
    throw Error(ErrorKind::kConfig, str("end-of-text id ", enc.eot_id, " >= vocab size ", enc.vocab_size), enc.origin);
  if (opt.shard_tokens < 1 || opt.shard_tokens > INT32_MAX)
    throw Error(ErrorKind::kConfig, str("shard size ", opt.shard_tokens, " tokens is outside 1..", INT32_MAX),
                "--shard-tokens", "llm.c uses 100000000");
  if (opt.val_tokens < 0)
    throw Error(ErrorKind::kConfig, str("val tokens ", opt.val_tokens, " must be >= 0"), "--val-tokens");
  if (opt.out_dir.empty()) throw Error(ErrorKind::kConfig, "no output directory", "--out");
  if (opt.unit_bytes < 1) throw Error(ErrorKind::kConfig, "unit_bytes must be >= 1", "data encode");

  EncodeResult result;
  result.files = collect_input_files(opt.inputs);
  uint64_t bytes_total = 0;
  for (const std::string& f : result.files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    if (ec) throw_unreadable(f, ec.value());
    bytes_total += size;
  }
  const std::string name = opt.name.empty() ? default_name(opt.out_dir) : opt.name;
  if (name.find('/') != std::string::npos)
    throw Error(ErrorKind::kConfig, "shard name '" + name + "' contains '/'", "--name", "use a plain file-name prefix");
  result.name = name;
  check_fresh_output(opt.out_dir, name);
  ensure_dir(opt.out_dir);

  result.threads = opt.threads > 0 ? opt.threads : std::max(1, int(std::thread::hardware_concurrency()));
  result.width = enc.vocab_size <= 65536 ? TokenWidth::kUint16 : TokenWidth::kUint32;
  ShardSink sink(opt.out_dir, name, result.width, opt.shard_tokens, opt.val_tokens);

  EncodeProgress progress;
  progress.bytes_total = bytes_total;
  auto last_report = Clock::now();
  auto report = [&](bool done) {
    if (!opt.on_progress) return;
    progress.shards = int(sink.shards().size());
    progress.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    progress.done = done;
    opt.on_progress(progress);
  };
  auto consume = [&](Task& task) {
    for (uint32_t id : task.tokens)
      if (int64_t(id) >= enc.vocab_size)
        throw Error(ErrorKind::kData, str("tokenizer produced id ", id, " >= its vocab size ", enc.vocab_size),
                    enc.origin, "the tokenizer files are inconsistent");
    sink.append(task.tokens);
    progress.bytes_done += task.unit.input_bytes;
    progress.documents += task.documents;
    progress.tokens += int64_t(task.tokens.size());
    if (opt.on_progress && Clock::now() - last_report >= std::chrono::duration<double>(opt.progress_interval_s)) {
      last_report = Clock::now();
      report(false);
    }
  };

  {
    OrderedPool pool(enc, result.threads);
    for (const std::string& file : result.files) {
      Unit unit;
      unit.jsonl = is_jsonl(file);
      unit.file = &file;
      auto emit = [&] {
        Unit full = std::move(unit);
        unit = Unit();
        unit.jsonl = full.jsonl;
        unit.file = full.file;
        pool.submit(std::move(full), consume);
      };
      if (unit.jsonl)
        read_jsonl_file(file, opt, unit, emit);
      else
        read_text_file(file, opt, enc.chunkable, unit, emit);
      if (!unit.empty() || unit.input_bytes > 0) emit();  // units never span files: errors name one file
    }
    pool.drain(consume);
  }
  if (progress.documents == 0)
    throw Error(ErrorKind::kData, str("no documents in ", result.files.size(), " input file(s)"), opt.inputs.front(),
                "the inputs are empty (or every JSONL \"text\" is empty)");
  sink.finish();

  result.input_bytes = progress.bytes_done;
  result.documents = progress.documents;
  result.tokens = progress.tokens;
  result.val_tokens = sink.val_tokens();
  result.train_tokens = sink.train_tokens();
  result.shards = sink.shards();

  nlohmann::ordered_json m;
  m["format"] = kEncodeManifestFormat;
  m["name"] = name;
  m["tokenizer"] = {{"origin", enc.origin}, {"vocab_size", enc.vocab_size}, {"eot_id", enc.eot_id}};
  m["token_dtype"] = token_width_name(result.width);
  m["inputs"] = {{"files", result.files.size()}, {"bytes", result.input_bytes}, {"paths", result.files}};
  const char* split_kind = opt.split.kind == DocumentSplit::Kind::kWholeFile    ? "whole-file"
                           : opt.split.kind == DocumentSplit::Kind::kBlankLines ? "blank-lines"
                                                                                : "literal";
  m["documents"] = {{"count", result.documents},
                    {"text_split", split_kind},
                    {"separator", opt.split.literal},
                    {"eot_before_each", true}};
  m["tokens"] = {{"total", result.tokens}, {"val", result.val_tokens}, {"train", result.train_tokens}};
  m["shard_tokens"] = opt.shard_tokens;
  m["val_tokens_requested"] = opt.val_tokens;
  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  for (const EncodedShard& s : result.shards)
    shards.push_back(
        {{"file", s.file}, {"split", s.split}, {"tokens", s.tokens}, {"bytes", s.bytes}, {"sha256", s.sha256}});
  m["shards"] = shards;
  result.manifest_path = opt.out_dir + "/" + kEncodeManifestName;
  atomic_write_string(result.manifest_path, m.dump(2) + "\n");
  sink.commit();

  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report(true);
  return result;
}

// ---- manifest --------------------------------------------------------------------------------

std::string file_sha256(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(ErrorKind::kData, "cannot read: " + std::string(std::strerror(errno)), path, "check the path");
  Sha256 h;
  std::vector<char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), n);
  const bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) throw Error(ErrorKind::kData, "read error", path, "check the disk");
  return h.hex_digest();
}

EncodeManifest read_encode_manifest(const std::string& path) {
  const std::string text = read_file_to_string(path, ErrorKind::kData);
  const char* hint = "manifest.json is written by `topotrain data encode`; re-run it to regenerate";
  EncodeManifest m;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.value("format", "") != kEncodeManifestFormat)
      throw Error(ErrorKind::kData, str("not a ", kEncodeManifestFormat, " manifest"), path, hint);
    // Counts must be JSON integers >= 0: a float such as 1e300 would overflow the conversion.
    auto count = [&](const nlohmann::json& v, const char* field) -> int64_t {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        throw Error(ErrorKind::kData, str("manifest field ", field, " is not a count (an integer >= 0): ", v.dump()),
                    path, hint);
      return v.get<int64_t>();
    };
    m.name = j.at("name").get<std::string>();
    m.tokenizer = j.at("tokenizer").at("origin").get<std::string>();
    m.vocab_size = count(j.at("tokenizer").at("vocab_size"), "tokenizer.vocab_size");
    m.eot_id = count(j.at("tokenizer").at("eot_id"), "tokenizer.eot_id");
    m.token_dtype = j.at("token_dtype").get<std::string>();
    m.documents = count(j.at("documents").at("count"), "documents.count");
    m.tokens = count(j.at("tokens").at("total"), "tokens.total");
    m.val_tokens = count(j.at("tokens").at("val"), "tokens.val");
    m.train_tokens = count(j.at("tokens").at("train"), "tokens.train");
    for (const auto& s : j.at("shards")) {
      EncodedShard e;
      e.file = s.at("file").get<std::string>();
      e.split = s.at("split").get<std::string>();
      e.tokens = count(s.at("tokens"), "shards[].tokens");
      e.bytes = uint64_t(count(s.at("bytes"), "shards[].bytes"));
      e.sha256 = s.at("sha256").get<std::string>();
      m.shards.push_back(e);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kData, str("malformed manifest: ", e.what()), path, hint);
  }
  return m;
}

}  // namespace tt::data
