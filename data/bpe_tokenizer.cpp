// Byte-level BPE: loading OpenAI / Hugging Face vocabulary files, encoding and decoding.
// Design (see bpe_tokenizer.h): all lookups are open-addressing tables over an append-only byte
// arena (no per-entry allocation); merging works on ids through a pair table, with a linear-scan
// merger for short pieces and a heap merger for long ones; a per-thread cache memoises pieces that
// needed merging.
#include "data/bpe_tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/error.h"
#include "core/fs.h"
#include "data/pretokenizer.h"

namespace tt::data {

namespace {

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
constexpr size_t kHeapMergeMinBytes = 64;     // pieces at least this long merge with a heap
constexpr size_t kMaxCachedPieceBytes = 256;  // longer pieces are not memoised
constexpr size_t kMaxCacheEntries = 1 << 16;  // the per-thread cache is cleared when it grows past this
constexpr size_t kPiecesPerBatch = 4096;      // pre-tokenized per round, bounds memory for long texts

uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0x94d049bb133111ebull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}

// Open-addressing map from byte strings to two uint32 values; keys live in an owned arena.
class StringTable {
 public:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0;
    uint32_t key_length = kEmpty;
    uint32_t value = 0, value2 = 0;
  };

  StringTable() { slots_.resize(16); }

  const Slot* find(std::string_view key) const { return find(key, hash_bytes(key.data(), key.size())); }
  const Slot* find(std::string_view key, uint64_t h) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.key_length == kEmpty) return nullptr;
      if (s.hash == h && s.key_length == key.size() &&
          std::memcmp(arena_.data() + s.key_offset, key.data(), key.size()) == 0)
        return &s;
    }
  }
  // Inserts key -> (value, value2) unless present; returns the slot and whether it was inserted.
  std::pair<Slot*, bool> insert(std::string_view key, uint32_t value, uint32_t value2 = 0) {
    return insert(key, hash_bytes(key.data(), key.size()), value, value2);
  }
  std::pair<Slot*, bool> insert(std::string_view key, uint64_t h, uint32_t value, uint32_t value2) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.key_length == kEmpty) {
        s.hash = h;
        s.key_offset = static_cast<uint32_t>(arena_.size());
        s.key_length = static_cast<uint32_t>(key.size());
        s.value = value;
        s.value2 = value2;
        arena_.append(key.data(), key.size());
        ++size_;
        return {&s, true};
      }
      if (s.hash == h && s.key_length == key.size() &&
          std::memcmp(arena_.data() + s.key_offset, key.data(), key.size()) == 0)
        return {&s, false};
    }
  }
  size_t size() const { return size_; }
  size_t arena_bytes() const { return arena_.size(); }
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    arena_.clear();
    size_ = 0;
  }

 private:
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.key_length == kEmpty) continue;
      size_t i = s.hash & mask;
      while (slots_[i].key_length != kEmpty) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t size_ = 0;
};

// Open-addressing map (left id, right id) -> (priority, merged id).
class PairTable {
 public:
  struct Merge {
    uint32_t rank = kNoRank;
    uint32_t merged = 0;
  };

  PairTable() { slots_.resize(16); }
  const Merge& find(uint32_t left, uint32_t right) const {
    const uint64_t key = uint64_t(left) << 32 | right;
    const size_t mask = slots_.size() - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.merge;
      if (s.key == kEmptyKey) return missing_;
    }
  }
  // Keeps the first (lowest-rank) entry for a pair.
  void insert(uint32_t left, uint32_t right, uint32_t rank, uint32_t merged) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint64_t key = uint64_t(left) << 32 | right;
    const size_t mask = slots_.size() - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.key == key) {
        if (rank < s.merge.rank) s.merge = {rank, merged};
        return;
      }
      if (s.key == kEmptyKey) {
        s.key = key;
        s.merge = {rank, merged};
        ++size_;
        return;
      }
    }
  }

 private:
  static constexpr uint64_t kEmptyKey = ~uint64_t(0);
  struct Slot {
    uint64_t key = kEmptyKey;
    Merge merge;
  };
  static uint64_t mix(uint64_t k) {
    k *= 0x9E3779B97F4A7C15ull;
    return k ^ (k >> 29);
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.key == kEmptyKey) continue;
      size_t i = mix(s.key) & mask;
      while (slots_[i].key != kEmptyKey) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
  Merge missing_;
};

// ---- GPT-2 bytes_to_unicode ------------------------------------------------------------------

struct ByteLevelTables {
  std::string symbol[256];          // byte -> UTF-8 of its code point
  int16_t byte_of_code_point[512];  // code point -> byte, -1 when not a byte symbol
  ByteLevelTables() {
    std::fill(std::begin(byte_of_code_point), std::end(byte_of_code_point), int16_t(-1));
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int cp = printable ? b : next++;
      byte_of_code_point[cp] = int16_t(b);
      if (cp < 0x80) {
        symbol[b] = std::string(1, char(cp));
      } else {
        symbol[b] = std::string{char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
      }
    }
  }
};

const ByteLevelTables& byte_level_tables() {
  static const ByteLevelTables tables;
  return tables;
}

// ---- errors and JSON -------------------------------------------------------------------------

[[noreturn]] void data_error(const std::string& what, const std::string& where, const std::string& hint = "") {
  throw Error(ErrorKind::kData, what, where, hint);
}

nlohmann::json parse_json(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    data_error(str("malformed JSON: ", e.what()), where, "the file is truncated or not a tokenizer file");
  }
}

// Ids index tables sized by the largest one, so an id far beyond the number of tokens the file
// lists (vocabularies are numbered densely from 0) is refused rather than allocated for:
// {"a": 4000000000} would otherwise ask for four billion entries.
uint32_t id_limit(size_t listed_tokens) {
  return uint32_t(std::min<uint64_t>(4 * uint64_t(listed_tokens) + 1024, kNoRank));
}

uint32_t json_id(const nlohmann::json& v, const std::string& token, const std::string& where, uint32_t limit) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    data_error(str("token '", token, "' has id ", v.dump(), ", expected a non-negative integer"), where);
  if (v.get<int64_t>() >= int64_t(limit))
    data_error(str("token '", token, "' has id ", v.dump(), ", far beyond the number of tokens in the file"), where,
               "token ids number the vocabulary from 0; the file is damaged");
  return static_cast<uint32_t>(v.get<int64_t>());
}

std::string json_quote(std::string_view s) {
  std::string out = nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return out;
}

std::string join_path(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}
std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::atomic<uint64_t> next_instance_id{1};

}  // namespace

// ---- the tokenizer ---------------------------------------------------------------------------

struct BpeTokenizer::Impl {
  std::string origin;
  uint64_t instance_id = 0;
  std::vector<std::string> id_bytes;  // id -> raw bytes (special tokens: their text)
  std::vector<uint8_t> id_kind;       // kMissing / kRegular / kSpecial
  StringTable regular;                // raw bytes -> id, regular tokens only
  uint32_t byte_id[256] = {};
  PairTable pairs;
  bool whole_piece_lookup = false;                    // tiktoken: a piece that is a token is emitted as is
  std::vector<std::pair<uint32_t, uint32_t>> merges;  // rank order, for vocab_bpe()
  std::map<std::string, uint32_t> specials;
  Pretokenizer pretokenizer;

  enum : uint8_t { kMissing = 0, kRegular = 1, kSpecial = 2 };

  void set_token(uint32_t id, std::string bytes, uint8_t kind) {
    if (id >= id_bytes.size()) {
      id_bytes.resize(size_t(id) + 1);
      id_kind.resize(size_t(id) + 1, kMissing);
    }
    id_bytes[id] = std::move(bytes);
    id_kind[id] = kind;
  }
  std::optional<uint32_t> regular_id(std::string_view bytes) const {
    const StringTable::Slot* s = regular.find(bytes);
    if (!s) return std::nullopt;
    return s->value;
  }
  // Builds `regular` from id_bytes / id_kind and checks every byte has a token.
  void index_regular(const std::string& where) {
    for (uint32_t id = 0; id < id_bytes.size(); ++id) {
      if (id_kind[id] != kRegular) continue;
      if (!regular.insert(id_bytes[id], id).second)
        data_error(str("two tokens have the same bytes ", json_quote(byte_level_encode(id_bytes[id])), " (ids ",
                       regular.find(id_bytes[id])->value, " and ", id, ")"),
                   where);
    }
    for (int b = 0; b < 256; ++b) {
      auto id = regular_id(std::string_view(reinterpret_cast<const char*>(&b), 1));
      if (!id)
        data_error(str("byte 0x", "0123456789abcdef"[b >> 4], "0123456789abcdef"[b & 15], " (symbol ",
                       json_quote(byte_level_tables().symbol[b]), ") has no token"),
                   where, "a byte-level BPE vocabulary must contain all 256 single-byte tokens");
      byte_id[b] = *id;
    }
  }

  void encode_piece(std::string_view piece, std::vector<uint32_t>& out) const;
  void merge_short(std::string_view piece, std::vector<uint32_t>& out) const;
  void merge_long(std::string_view piece, std::vector<uint32_t>& out) const;
};

namespace {

// Per-thread memo of pieces that needed merging: piece -> ids. One cache per thread serves one
// tokenizer at a time (switching tokenizers clears it).
struct PieceCache {
  uint64_t owner = 0;
  StringTable table;  // piece -> (offset into ids, count)
  std::vector<uint32_t> ids;
};

PieceCache& piece_cache(uint64_t owner) {
  thread_local PieceCache cache;
  if (cache.owner != owner || cache.table.size() >= kMaxCacheEntries) {
    cache.table.clear();
    cache.ids.clear();
    cache.owner = owner;
  }
  return cache;
}

}  // namespace

// Linear-scan merging (what tiktoken does): ranks[i] is the rank of merging symbols i and i+1.
void BpeTokenizer::Impl::merge_short(std::string_view piece, std::vector<uint32_t>& out) const {
  const size_t n = piece.size();
  uint32_t ids[kHeapMergeMinBytes], ranks[kHeapMergeMinBytes], merged[kHeapMergeMinBytes];
  for (size_t i = 0; i < n; ++i) ids[i] = byte_id[uint8_t(piece[i])];
  for (size_t i = 0; i + 1 < n; ++i) {
    const PairTable::Merge& m = pairs.find(ids[i], ids[i + 1]);
    ranks[i] = m.rank;
    merged[i] = m.merged;
  }
  size_t count = n;
  while (count > 1) {
    size_t best = 0;
    uint32_t best_rank = ranks[0];
    for (size_t i = 1; i + 1 < count; ++i)
      if (ranks[i] < best_rank) best_rank = ranks[i], best = i;
    if (best_rank == kNoRank) break;
    ids[best] = merged[best];
    // Remove symbol best + 1 (and the pair entry that started there).
    for (size_t i = best + 1; i + 1 < count; ++i) ids[i] = ids[i + 1];
    for (size_t i = best + 1; i + 2 < count; ++i) ranks[i] = ranks[i + 1], merged[i] = merged[i + 1];
    --count;
    if (best + 1 < count) {
      const PairTable::Merge& m = pairs.find(ids[best], ids[best + 1]);
      ranks[best] = m.rank;
      merged[best] = m.merged;
    }
    if (best > 0) {
      const PairTable::Merge& m = pairs.find(ids[best - 1], ids[best]);
      ranks[best - 1] = m.rank;
      merged[best - 1] = m.merged;
    }
  }
  out.insert(out.end(), ids, ids + count);
}

// Heap merging for long pieces: a doubly linked list of symbols and a min-heap of candidate pairs
// ordered by (rank, position); stale heap entries are recognised by their ids and skipped.
void BpeTokenizer::Impl::merge_long(std::string_view piece, std::vector<uint32_t>& out) const {
  const int n = static_cast<int>(piece.size());
  struct Symbol {
    uint32_t id;
    int prev, next;
  };
  struct Candidate {
    uint32_t rank;
    int pos;
    uint32_t left, right, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<Symbol> sym(n);
  for (int i = 0; i < n; ++i) sym[i] = {byte_id[uint8_t(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  std::vector<Candidate> storage;
  storage.reserve(n);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap(std::greater<Candidate>(),
                                                                                       std::move(storage));
  auto push = [&](int pos) {
    if (pos < 0 || sym[pos].next < 0) return;
    const uint32_t l = sym[pos].id, r = sym[sym[pos].next].id;
    const PairTable::Merge& m = pairs.find(l, r);
    if (m.rank != kNoRank) heap.push({m.rank, pos, l, r, m.merged});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<uint8_t> alive(n, 1);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos] || sym[c.pos].id != c.left) continue;
    const int next = sym[c.pos].next;
    if (next < 0 || sym[next].id != c.right) continue;
    sym[c.pos].id = c.merged;
    alive[next] = 0;
    sym[c.pos].next = sym[next].next;
    if (sym[next].next >= 0) sym[sym[next].next].prev = c.pos;
    push(sym[c.pos].prev);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

void BpeTokenizer::Impl::encode_piece(std::string_view piece, std::vector<uint32_t>& out) const {
  if (piece.size() == 1) {
    out.push_back(byte_id[uint8_t(piece[0])]);
    return;
  }
  const uint64_t h = hash_bytes(piece.data(), piece.size());
  if (whole_piece_lookup) {
    if (const StringTable::Slot* s = regular.find(piece, h)) {
      out.push_back(s->value);
      return;
    }
  }
  if (piece.size() >= kHeapMergeMinBytes) {
    merge_long(piece, out);
    return;
  }
  PieceCache& cache = piece_cache(instance_id);
  if (const StringTable::Slot* s = cache.table.find(piece, h)) {
    out.insert(out.end(), cache.ids.begin() + s->value, cache.ids.begin() + s->value + s->value2);
    return;
  }
  const size_t before = out.size();
  merge_short(piece, out);
  if (piece.size() <= kMaxCachedPieceBytes) {
    const size_t count = out.size() - before;
    cache.table.insert(piece, h, static_cast<uint32_t>(cache.ids.size()), static_cast<uint32_t>(count));
    cache.ids.insert(cache.ids.end(), out.begin() + before, out.end());
  }
}

// ---- loading ---------------------------------------------------------------------------------

namespace {

using ImplPtr = std::shared_ptr<BpeTokenizer::Impl>;

ImplPtr new_impl(const std::string& origin) {
  auto impl = std::make_shared<BpeTokenizer::Impl>();
  impl->origin = origin;
  impl->instance_id = next_instance_id.fetch_add(1);
  return impl;
}

std::string decode_symbols(const std::string& symbols, const std::string& what, const std::string& where) {
  std::string bytes;
  if (!byte_level_decode(symbols, bytes))
    data_error(str(what, " ", json_quote(symbols), " contains a character that is not a GPT-2 byte-level symbol"),
               where, "only byte-level BPE vocabularies (GPT-2 style, bytes_to_unicode symbols) are supported");
  return bytes;
}

// tiktoken's merge rule: any adjacent pair whose concatenation is a merge-produced token merges,
// with that token's rank. `token_rank[id]` is the rank of the first merge producing id, or kNoRank.
void build_concatenation_pairs(BpeTokenizer::Impl& impl, const std::vector<uint32_t>& token_rank) {
  for (uint32_t id = 0; id < token_rank.size(); ++id) {
    if (token_rank[id] == kNoRank) continue;
    const std::string_view t = impl.id_bytes[id];
    for (size_t k = 1; k < t.size(); ++k) {
      auto left = impl.regular_id(t.substr(0, k));
      if (!left) continue;
      auto right = impl.regular_id(t.substr(k));
      if (right) impl.pairs.insert(*left, *right, token_rank[id], id);
    }
  }
}

ImplPtr build_openai(const std::string& encoder_text, const std::string& vocab_text, const std::string& origin,
                     const std::string& encoder_where, const std::string& vocab_where) {
  ImplPtr impl = new_impl(origin);
  using Impl = BpeTokenizer::Impl;
  const nlohmann::json enc = parse_json(encoder_text, encoder_where);
  if (!enc.is_object())
    data_error("expected a JSON object mapping byte-level tokens to ids", encoder_where,
               "is this GPT-2's encoder.json?");

  // Every key that decodes byte-level is a candidate regular token; regular are the 256 bytes and
  // the merge products, everything else is special (its key is its text).
  struct Entry {
    uint32_t id;
    std::string key, bytes;
    bool decodable;
  };
  std::vector<Entry> entries;
  entries.reserve(enc.size());
  StringTable candidates;  // decoded bytes -> index into entries
  for (auto it = enc.begin(); it != enc.end(); ++it) {
    Entry e{json_id(it.value(), it.key(), encoder_where, id_limit(enc.size())), it.key(), "", false};
    e.decodable = byte_level_decode(e.key, e.bytes);
    if (e.decodable) candidates.insert(e.bytes, static_cast<uint32_t>(entries.size()));
    entries.push_back(std::move(e));
  }
  std::vector<uint8_t> produced(entries.size(), 0);
  std::vector<uint32_t> entry_rank(entries.size(), kNoRank);
  std::vector<std::pair<uint32_t, uint32_t>> merge_entries;

  size_t line_begin = 0, line_no = 0;
  uint32_t rank = 0;
  while (line_begin < vocab_text.size()) {
    size_t line_end = vocab_text.find('\n', line_begin);
    if (line_end == std::string::npos) line_end = vocab_text.size();
    std::string line = vocab_text.substr(line_begin, line_end - line_begin);
    line_begin = line_end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line[0] == '#')) continue;
    const std::string where = str(vocab_where, ":", line_no);
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      data_error(str("expected a merge 'A B', got ", json_quote(line)), where, "vocab.bpe holds one merge per line");
    const std::string a = decode_symbols(line.substr(0, space), "merge part", where);
    const std::string b = decode_symbols(line.substr(space + 1), "merge part", where);
    uint32_t idx[3];
    const std::string parts[3] = {a, b, a + b};
    for (int p = 0; p < 3; ++p) {
      const StringTable::Slot* s = candidates.find(parts[p]);
      if (!s)
        data_error(str("merge ", json_quote(line), " refers to ", json_quote(byte_level_encode(parts[p])),
                       ", which is not in encoder.json"),
                   where, "encoder.json and vocab.bpe must come from the same tokenizer");
      idx[p] = s->value;
    }
    produced[idx[2]] = 1;
    entry_rank[idx[2]] = std::min(entry_rank[idx[2]], rank);
    merge_entries.emplace_back(idx[0], idx[1]);
    ++rank;
  }

  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    if (e.id < impl->id_kind.size() && impl->id_kind[e.id] != Impl::kMissing)
      data_error(str("id ", e.id, " is used by two tokens (", json_quote(e.key), " and another)"), encoder_where);
    const bool regular = e.decodable && (e.bytes.size() == 1 || produced[i]);
    if (regular) {
      impl->set_token(e.id, std::move(e.bytes), Impl::kRegular);
    } else {
      impl->specials[e.key] = e.id;
      impl->set_token(e.id, e.key, Impl::kSpecial);
    }
  }
  impl->index_regular(encoder_where);
  std::vector<uint32_t> token_rank(impl->id_bytes.size(), kNoRank);
  for (size_t i = 0; i < entries.size(); ++i) token_rank[entries[i].id] = entry_rank[i];
  for (const auto& [l, r] : merge_entries) impl->merges.emplace_back(entries[l].id, entries[r].id);
  build_concatenation_pairs(*impl, token_rank);
  impl->whole_piece_lookup = true;
  return impl;
}

const nlohmann::json* member(const nlohmann::json& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

void check_hf_pre_tokenizer(const nlohmann::json& root, const std::string& where) {
  const std::string hint =
      "only byte-level BPE with GPT-2 pre-tokenization is supported (pre_tokenizer ByteLevel, no normalizer)";
  const nlohmann::json* pre = member(root, "pre_tokenizer");
  const nlohmann::json* type = pre ? member(*pre, "type") : nullptr;
  if (!type || *type != "ByteLevel")
    data_error(str("pre_tokenizer is ", pre ? (type ? type->dump() : pre->dump()) : "missing",
                   ", not ByteLevel: not a byte-level BPE tokenizer"),
               where, hint);
  if (const auto* v = member(*pre, "add_prefix_space"); v && *v == true)
    data_error("pre_tokenizer ByteLevel has add_prefix_space=true, which GPT-2 encoding does not do", where, hint);
  if (const auto* v = member(*pre, "use_regex"); v && *v == false)
    data_error("pre_tokenizer ByteLevel has use_regex=false (a custom split pattern)", where, hint);
  if (const nlohmann::json* norm = member(root, "normalizer"))
    data_error(str("normalizer ", norm->value("type", norm->dump()), " is not supported"), where, hint);
}

ImplPtr build_hf(const std::string& text, const std::string& origin, const std::string& where) {
  using Impl = BpeTokenizer::Impl;
  ImplPtr impl = new_impl(origin);
  const nlohmann::json root = parse_json(text, where);
  const nlohmann::json* model = member(root, "model");
  if (!model || !model->is_object()) data_error("no \"model\" object: not a Hugging Face tokenizer.json", where);
  if (const auto* type = member(*model, "type"); type && *type != "BPE")
    data_error(str("model type ", type->dump(), " is not BPE"), where, "only byte-level BPE tokenizers are supported");
  check_hf_pre_tokenizer(root, where);
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto* v = member(*model, affix); v && v->is_string() && !v->get<std::string>().empty())
      data_error(str("model.", affix, " is set: not a byte-level BPE tokenizer"), where);
  if (const auto* v = member(*model, "dropout"); v && v->is_number() && v->get<double>() > 0)
    data_error("model.dropout > 0 makes encoding random", where, "set \"dropout\": null");
  if (const auto* v = member(*model, "ignore_merges"); v && *v == true) impl->whole_piece_lookup = true;

  const nlohmann::json* added = member(root, "added_tokens");
  const nlohmann::json* vocab = member(*model, "vocab");
  const size_t listed = (added ? added->size() : 0) + (vocab ? vocab->size() : 0);  // bounds the ids
  if (added) {
    if (!added->is_array()) data_error("added_tokens is not an array", where);
    for (const auto& t : *added) {
      const nlohmann::json* content = member(t, "content");
      const nlohmann::json* id = member(t, "id");
      if (!content || !content->is_string() || !id)
        data_error(str("added token ", t.dump(), " needs \"id\" and \"content\""), where);
      const std::string c = content->get<std::string>();
      const uint32_t i = json_id(*id, c, where, id_limit(listed));
      impl->specials[c] = i;
      impl->set_token(i, c, Impl::kSpecial);
    }
  }
  if (!vocab || !vocab->is_object()) data_error("model.vocab is missing or not an object", where);
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    const uint32_t id = json_id(it.value(), it.key(), where, id_limit(listed));
    if (id < impl->id_kind.size() && impl->id_kind[id] == Impl::kSpecial) continue;  // an added token
    if (id < impl->id_kind.size() && impl->id_kind[id] != Impl::kMissing)
      data_error(str("id ", id, " is used by two tokens (", json_quote(it.key()), " and another)"), where);
    impl->set_token(id, decode_symbols(it.key(), "vocab entry", where), Impl::kRegular);
  }
  impl->index_regular(where);

  const nlohmann::json* merges = member(*model, "merges");
  if (!merges || !merges->is_array()) data_error("model.merges is missing or not an array", where);
  uint32_t rank = 0;
  for (const auto& m : *merges) {
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        data_error(str("merge ", rank, " is ", json_quote(s), ", expected \"A B\""), where);
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      data_error(str("merge ", rank, " is ", m.dump(), ", expected \"A B\" or [\"A\", \"B\"]"), where);
    }
    const std::string what = str("merge ", rank, " part");
    const std::string pa = decode_symbols(a, what, where), pb = decode_symbols(b, what, where);
    uint32_t ids[3];
    const std::string parts[3] = {pa, pb, pa + pb};
    for (int p = 0; p < 3; ++p) {
      auto id = impl->regular_id(parts[p]);
      if (!id)
        data_error(str("merge ", rank, " (", json_quote(a), ", ", json_quote(b), ") refers to ",
                       json_quote(byte_level_encode(parts[p])), ", which is not in model.vocab"),
                   where);
      ids[p] = *id;
    }
    impl->pairs.insert(ids[0], ids[1], rank, ids[2]);
    impl->merges.emplace_back(ids[0], ids[1]);
    ++rank;
  }
  return impl;
}

}  // namespace

BpeTokenizer BpeTokenizer::from_openai_files(const std::string& encoder_json, const std::string& vocab_bpe,
                                             const std::string& origin) {
  return BpeTokenizer(
      build_openai(encoder_json, vocab_bpe, origin, origin + " [encoder.json]", origin + " [vocab.bpe]"));
}

BpeTokenizer BpeTokenizer::from_hf_json(const std::string& tokenizer_json, const std::string& origin) {
  return BpeTokenizer(build_hf(tokenizer_json, origin, origin));
}

BpeTokenizer BpeTokenizer::load(const std::string& path) {
  const std::string hint = "pass a directory with encoder.json + vocab.bpe (GPT-2) or tokenizer.json (Hugging Face)";
  std::string dir;
  if (is_directory(path)) {
    dir = path;
  } else if (is_regular_file(path)) {
    const std::string name = base_name(path);
    if (name != "encoder.json" && name != "vocab.bpe")
      return BpeTokenizer(build_hf(read_file_to_string(path, ErrorKind::kData), path, path));
    dir = parent_dir(path);
  } else {
    data_error("tokenizer not found", path, hint);
  }
  const std::string enc = join_path(dir, "encoder.json"), bpe = join_path(dir, "vocab.bpe");
  const std::string hf = join_path(dir, "tokenizer.json");
  if (is_regular_file(enc) && is_regular_file(bpe))
    return BpeTokenizer(build_openai(read_file_to_string(enc, ErrorKind::kData),
                                     read_file_to_string(bpe, ErrorKind::kData), dir, enc, bpe));
  if (is_regular_file(enc) != is_regular_file(bpe))
    data_error(str(is_regular_file(enc) ? "vocab.bpe" : "encoder.json", " is missing next to ",
                   is_regular_file(enc) ? "encoder.json" : "vocab.bpe"),
               is_regular_file(enc) ? bpe : enc, "the OpenAI format needs both files");
  if (is_regular_file(hf)) return BpeTokenizer(build_hf(read_file_to_string(hf, ErrorKind::kData), hf, hf));
  data_error("no tokenizer files (encoder.json + vocab.bpe, or tokenizer.json)", path, hint);
}

// ---- encoding, decoding, queries -------------------------------------------------------------

void BpeTokenizer::encode(std::string_view text, std::vector<uint32_t>& out) const {
  const Impl& impl = *impl_;
  thread_local std::vector<std::string_view> pieces;
  size_t pos = 0;
  while (pos < text.size()) {
    pieces.clear();
    pos = impl.pretokenizer.split(text, pos, kPiecesPerBatch, pieces);
    for (std::string_view piece : pieces) impl.encode_piece(piece, out);
  }
}

std::vector<uint32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 4 + 16);
  encode(text, out);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<uint32_t>& ids) const { return decode(ids.data(), ids.size()); }

std::string BpeTokenizer::decode(const uint32_t* ids, size_t n) const {
  const Impl& impl = *impl_;
  std::string out;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= impl.id_kind.size() || impl.id_kind[ids[i]] == Impl::kMissing)
      data_error(str("token id ", ids[i], " at position ", i, " is not in the tokenizer (vocab size ",
                     impl.id_bytes.size(), ")"),
                 impl.origin, "the ids were produced with a different tokenizer");
    total += impl.id_bytes[ids[i]].size();
  }
  out.reserve(total);
  for (size_t i = 0; i < n; ++i) out += impl.id_bytes[ids[i]];
  return out;
}

const std::string& BpeTokenizer::token_bytes(uint32_t id) const {
  const Impl& impl = *impl_;
  if (id >= impl.id_kind.size() || impl.id_kind[id] == Impl::kMissing)
    data_error(str("token id ", id, " is not in the tokenizer (vocab size ", impl.id_bytes.size(), ")"), impl.origin);
  return impl.id_bytes[id];
}

int BpeTokenizer::vocab_size() const { return static_cast<int>(impl_->id_bytes.size()); }

std::optional<uint32_t> BpeTokenizer::special_token_id(const std::string& token) const {
  auto it = impl_->specials.find(token);
  if (it == impl_->specials.end()) return std::nullopt;
  return it->second;
}

uint32_t BpeTokenizer::eot_id() const {
  if (auto id = special_token_id("<|endoftext|>")) return *id;
  data_error("the tokenizer has no <|endoftext|> token", impl_->origin,
             "documents are separated by <|endoftext|>; add it as a special token");
}

const std::string& BpeTokenizer::origin() const { return impl_->origin; }

std::string BpeTokenizer::encoder_json() const {
  const Impl& impl = *impl_;
  std::string out = "{";
  bool first = true;
  for (uint32_t id = 0; id < impl.id_bytes.size(); ++id) {
    if (impl.id_kind[id] == Impl::kMissing) continue;
    out += first ? "" : ", ";
    first = false;
    out += json_quote(impl.id_kind[id] == Impl::kRegular ? byte_level_encode(impl.id_bytes[id]) : impl.id_bytes[id]);
    out += ": ";
    out += std::to_string(id);
  }
  out += "}";
  return out;
}

std::string BpeTokenizer::vocab_bpe() const {
  const Impl& impl = *impl_;
  std::string out = "#version: 0.2\n";
  for (const auto& [l, r] : impl.merges) {
    out += byte_level_encode(impl.id_bytes[l]);
    out += ' ';
    out += byte_level_encode(impl.id_bytes[r]);
    out += '\n';
  }
  return out;
}

// ---- byte-level symbols ------------------------------------------------------------------------

const std::string& byte_to_unicode(uint8_t byte) { return byte_level_tables().symbol[byte]; }

bool byte_level_decode(std::string_view symbols, std::string& bytes) {
  const ByteLevelTables& t = byte_level_tables();
  bytes.clear();
  bytes.reserve(symbols.size());
  for (size_t i = 0; i < symbols.size();) {
    const uint8_t c = uint8_t(symbols[i]);
    uint32_t cp;
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < symbols.size() && (uint8_t(symbols[i + 1]) & 0xC0) == 0x80) {
      cp = uint32_t(c & 0x1F) << 6 | (uint8_t(symbols[i + 1]) & 0x3F);
      i += 2;
    } else {
      return false;  // every byte symbol is below U+0800
    }
    if (cp >= 512 || t.byte_of_code_point[cp] < 0) return false;
    if (c >= 0x80 && cp < 0x80) return false;  // overlong form
    bytes.push_back(char(t.byte_of_code_point[cp]));
  }
  return true;
}

std::string byte_level_encode(std::string_view bytes) {
  const ByteLevelTables& t = byte_level_tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.symbol[uint8_t(c)];
  return out;
}

// ---- writing ---------------------------------------------------------------------------------

void write_openai_tokenizer(const std::string& dir, const std::vector<std::string>& token_bytes,
                            const std::vector<std::pair<std::string, std::string>>& merges,
                            const std::vector<std::string>& special_tokens) {
  const std::string where = join_path(dir, "encoder.json");
  StringTable index;
  for (uint32_t id = 0; id < token_bytes.size(); ++id) {
    if (token_bytes[id].empty()) data_error(str("token ", id, " is empty"), where);
    if (!index.insert(token_bytes[id], id).second)
      data_error(str("tokens ", index.find(token_bytes[id])->value, " and ", id, " have the same bytes ",
                     json_quote(byte_level_encode(token_bytes[id]))),
                 where);
  }
  std::vector<uint8_t> reachable(token_bytes.size(), 0);
  std::string vocab = "#version: 0.2\n";
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    const std::string parts[3] = {a, b, a + b};
    for (const std::string& p : parts)
      if (!index.find(p))
        data_error(str("merge ", r, " refers to ", json_quote(byte_level_encode(p)), ", which is not a token"), where);
    reachable[index.find(a + b)->value] = 1;
    vocab += byte_level_encode(a) + " " + byte_level_encode(b) + "\n";
  }
  std::string encoder = "{";
  for (uint32_t id = 0; id < token_bytes.size(); ++id) {
    if (token_bytes[id].size() > 1 && !reachable[id])
      data_error(str("token ", id, " (", json_quote(byte_level_encode(token_bytes[id])),
                     ") is neither a single byte nor produced by a merge"),
                 where);
    encoder += (id ? ", " : "") + json_quote(byte_level_encode(token_bytes[id])) + ": " + std::to_string(id);
  }
  for (size_t i = 0; i < special_tokens.size(); ++i)
    encoder += (token_bytes.empty() && i == 0 ? "" : ", ") + json_quote(special_tokens[i]) + ": " +
               std::to_string(token_bytes.size() + i);
  encoder += "}";
  // Round-trip through the loader: catches missing bytes and specials that collide with tokens.
  const BpeTokenizer check = BpeTokenizer::from_openai_files(encoder, vocab, dir);
  if (check.vocab_size() != int(token_bytes.size() + special_tokens.size()))
    data_error("special tokens collide with each other or with vocabulary tokens", where);
  ensure_dir(dir);
  atomic_write_string(join_path(dir, "encoder.json"), encoder);
  atomic_write_string(join_path(dir, "vocab.bpe"), vocab);
}

}  // namespace tt::data
