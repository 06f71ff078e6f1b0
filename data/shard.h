// llm.c token shards: a 256 x int32 little-endian header followed by the token ids.
//   header[0] = magic, header[1] = version, header[2] = token count
//   magic 20240520 / version 1 -> uint16 tokens;  magic 20240801 / version 7 -> uint32 tokens.
// Speaking this format lets users reuse shards prepared for llm.c (FineWeb, TinyStories).
// Design: a reader maps the file read-only (mmap) and validates the header against the file size
// up front, so a truncated or foreign file fails at open with the path, what is wrong and a hint,
// never later as garbage tokens. A writer never modifies a shard in place: it writes a sibling
// temp file, fsyncs it and renames it over the target, so readers see the old or the new shard.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tt::data {

enum class TokenWidth { kUint16 = 2, kUint32 = 4 };

constexpr int32_t kShardMagicUint16 = 20240520;
constexpr int32_t kShardVersionUint16 = 1;
constexpr int32_t kShardMagicUint32 = 20240801;
constexpr int32_t kShardVersionUint32 = 7;
constexpr int kShardHeaderInts = 256;
constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);  // 1024

// Bytes per token (2 or 4) and the dtype name ("uint16" / "uint32").
size_t token_width_bytes(TokenWidth width);
const char* token_width_name(TokenWidth width);

// kUint16 when every id is < 65536 (including an empty list), else kUint32.
TokenWidth narrowest_token_width(const std::vector<uint32_t>& tokens);

// Writes `tokens` as an llm.c shard with the magic/version of `width`, atomically (temp file in the
// same directory + fsync + rename + directory fsync: core/fs.h atomic_write_file); the parent
// directory must exist.
// Throws tt::Error(kData) when an id does not fit `width` or there are more than INT32_MAX tokens
// (the header stores an int32 count), and tt::Error(kRuntime, where=path) on I/O failure; on any
// failure an existing file at `path` is left untouched.
void write_shard(const std::string& path, const std::vector<uint32_t>& tokens, TokenWidth width);

struct ShardHeader {
  int32_t magic = 0;
  int32_t version = 0;
  int64_t num_tokens = 0;
  TokenWidth width = TokenWidth::kUint16;
};

// A validated, read-only view of one shard. The constructor throws tt::Error(kData, what,
// where=path, hint) when the file cannot be opened, is shorter than the header, has an unknown
// magic, a version that does not belong to its magic, a negative count, or a size other than
// 1024 + count * width bytes. The mapping lives as long as the reader; a reader is movable, not
// copyable. Const methods are safe to call from several threads at once.
class ShardReader {
 public:
  explicit ShardReader(const std::string& path);
  ~ShardReader();
  ShardReader(ShardReader&& other) noexcept;
  ShardReader& operator=(ShardReader&& other) noexcept;
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  const std::string& path() const { return path_; }
  const ShardHeader& header() const { return header_; }
  int64_t num_tokens() const { return header_.num_tokens; }
  TokenWidth width() const { return header_.width; }
  // Total file size in bytes (1024 + num_tokens * width).
  size_t file_bytes() const { return map_bytes_; }

  // Token i, 0 <= i < num_tokens() (checked by TT_ASSERT).
  uint32_t token(int64_t i) const;
  // Copies tokens [begin, begin + count) into out[0..count). The range must lie inside the shard
  // (TT_ASSERT). Throws tt::Error(kData) if a uint32 id does not fit int32.
  void copy_tokens(int64_t begin, int64_t count, int32_t* out) const;
  // Index of the first token whose id is >= limit, or -1 when there is none (one pass over the file).
  int64_t first_token_at_least(uint32_t limit) const;

 private:
  void close();

  std::string path_;
  ShardHeader header_;
  const unsigned char* map_ = nullptr;
  size_t map_bytes_ = 0;
};

// Checks that every token id of `shards` is below vocab_size, so that data tokenized for another
// vocabulary is found when the run starts rather than when a batch reaches it; throws
// tt::Error(kData) naming the shard, the token's index and byte offset, and its id.
void check_shard_ids_below(const std::vector<std::string>& shards, int64_t vocab_size);

// Expands a shard spec into a sorted list of files:
//   - a regular file            -> that file
//   - a directory               -> every regular *.bin file directly inside it, sorted by name
//   - a pattern with * ? or [   -> glob(3) matches that are regular files, sorted
// Throws tt::Error(kData, where=spec) when nothing matches, naming the spec and what was tried.
std::vector<std::string> resolve_shards(const std::string& spec);

}  // namespace tt::data
