// llm.c token shard reading (mmap + up-front validation), atomic writing and spec resolution.
// Design: every check that can fail on user data happens in the ShardReader constructor, with an
// error that names the file, the numbers that disagree and what to do about it.
#include "data/shard.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "core/error.h"
#include "core/fs.h"
#include "core/mapping_guard.h"
#include "core/model/llmc_model.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "llm.c shards are little-endian; a big-endian host needs byte swapping here");

namespace tt::data {

namespace {

std::string errno_text() { return std::strerror(errno); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

size_t token_width_bytes(TokenWidth width) { return static_cast<size_t>(width); }

const char* token_width_name(TokenWidth width) { return width == TokenWidth::kUint16 ? "uint16" : "uint32"; }

TokenWidth narrowest_token_width(const std::vector<uint32_t>& tokens) {
  for (uint32_t t : tokens)
    if (t > 0xFFFFu) return TokenWidth::kUint32;
  return TokenWidth::kUint16;
}

void write_shard(const std::string& path, const std::vector<uint32_t>& tokens, TokenWidth width) {
  if (tokens.size() > static_cast<size_t>(INT32_MAX))
    throw Error(ErrorKind::kData, str("cannot write ", tokens.size(), " tokens into one shard"), path,
                "the llm.c header stores an int32 count; split the tokens over several shards");
  if (width == TokenWidth::kUint16) {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] > 0xFFFFu)
        throw Error(ErrorKind::kData, str("token id ", tokens[i], " at position ", i, " does not fit a uint16 shard"),
                    path, "write a uint32 shard (narrowest_token_width picks the width that fits)");
  }

  int32_t header[kShardHeaderInts] = {};
  header[0] = width == TokenWidth::kUint16 ? kShardMagicUint16 : kShardMagicUint32;
  header[1] = width == TokenWidth::kUint16 ? kShardVersionUint16 : kShardVersionUint32;
  header[2] = static_cast<int32_t>(tokens.size());

  atomic_write_file(path, [&](FileWriter& w) {
    w.write(header, sizeof(header));
    if (width == TokenWidth::kUint32) {
      w.write(tokens.data(), tokens.size() * sizeof(uint32_t));
    } else {
      std::vector<uint16_t> chunk;
      constexpr size_t kChunk = size_t(1) << 20;
      for (size_t begin = 0; begin < tokens.size(); begin += kChunk) {
        size_t end = std::min(tokens.size(), begin + kChunk);
        chunk.assign(tokens.begin() + begin, tokens.begin() + end);
        w.write(chunk.data(), chunk.size() * sizeof(uint16_t));
      }
    }
  });
}

// ---- ShardReader --------------------------------------------------------------------------------

ShardReader::ShardReader(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorKind::kData, "cannot open token shard: " + errno_text(), path,
                "check the path; a directory or glob pattern goes through resolve_shards");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kData, "not a regular file", path,
                "pass a shard file, or a directory / glob pattern where a list of shards is accepted");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < kShardHeaderBytes) {
    ::close(fd);
    throw Error(ErrorKind::kData,
                str("file is ", size, " bytes, shorter than the ", kShardHeaderBytes, "-byte llm.c shard header"), path,
                "not a token shard, or the file was cut short; re-run the data prep");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int mmap_errno = errno;
  ::close(fd);
  if (map == MAP_FAILED)
    throw Error(ErrorKind::kData, str("cannot map token shard: ", std::strerror(mmap_errno)), path,
                "check that the file is readable and the address space is not exhausted");
  map_ = static_cast<const unsigned char*>(map);
  map_bytes_ = size;
  guard_mapping(map_, map_bytes_, path, "token shard", ErrorKind::kData);

  try {
    int32_t h[3];
    std::memcpy(h, map_, sizeof(h));
    header_.magic = h[0];
    header_.version = h[1];
    header_.num_tokens = h[2];
    int32_t expected_version = 0;
    if (h[0] == kShardMagicUint16) {
      header_.width = TokenWidth::kUint16;
      expected_version = kShardVersionUint16;
    } else if (h[0] == kShardMagicUint32) {
      header_.width = TokenWidth::kUint32;
      expected_version = kShardVersionUint32;
    } else {
      std::string hint = h[0] == kLlmcModelMagic
                             ? "this is an llm.c model file (magic 20240326), not a token shard"
                             : "not an llm.c token shard; produce one with `topotrain data` or llm.c's data prep";
      throw Error(ErrorKind::kData,
                  str("bad magic ", h[0], " (accepted: ", kShardMagicUint16, " = llm.c uint16 tokens, ",
                      kShardMagicUint32, " = llm.c uint32 tokens)"),
                  path, hint);
    }
    if (h[1] != expected_version)
      throw Error(ErrorKind::kData,
                  str("bad version ", h[1], " for magic ", h[0], " (expected ", expected_version, ")"), path,
                  "the shard was written by an incompatible tool or is corrupt; re-run the data prep");
    if (h[2] < 0)
      throw Error(ErrorKind::kData, str("negative token count ", h[2], " in header"), path,
                  "the header is corrupt; re-run the data prep");
    const size_t w = token_width_bytes(header_.width);
    const size_t expected = kShardHeaderBytes + static_cast<size_t>(h[2]) * w;
    if (size < expected)
      throw Error(ErrorKind::kData,
                  str("truncated: header says ", h[2], " ", token_width_name(header_.width), " tokens, so expected ",
                      expected, " bytes (1024 + ", h[2], " x ", w, "), but the file has ", size, " bytes (",
                      expected - size, " missing)"),
                  path, "the file was cut short (interrupted copy or download?); re-run the data prep");
    if (size > expected)
      throw Error(ErrorKind::kData,
                  str("file has ", size, " bytes but the header says ", h[2], " ", token_width_name(header_.width),
                      " tokens, i.e. expected ", expected, " bytes (", size - expected, " trailing bytes)"),
                  path, "the header count is wrong or data was appended; re-run the data prep");
  } catch (...) {
    close();
    throw;
  }
}

ShardReader::~ShardReader() { close(); }

ShardReader::ShardReader(ShardReader&& other) noexcept
    : path_(std::move(other.path_)), header_(other.header_), map_(other.map_), map_bytes_(other.map_bytes_) {
  other.map_ = nullptr;
  other.map_bytes_ = 0;
}

ShardReader& ShardReader::operator=(ShardReader&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    header_ = other.header_;
    map_ = other.map_;
    map_bytes_ = other.map_bytes_;
    other.map_ = nullptr;
    other.map_bytes_ = 0;
  }
  return *this;
}

void ShardReader::close() {
  if (map_) {
    unguard_mapping(map_);
    ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
  }
  map_ = nullptr;
  map_bytes_ = 0;
}

uint32_t ShardReader::token(int64_t i) const {
  TT_ASSERT(map_ && i >= 0 && i < header_.num_tokens, "token index ", i, " outside [0, ", header_.num_tokens, ") of ",
            path_);
  const unsigned char* p = map_ + kShardHeaderBytes;
  if (header_.width == TokenWidth::kUint16) {
    uint16_t v;
    std::memcpy(&v, p + 2 * static_cast<size_t>(i), 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, p + 4 * static_cast<size_t>(i), 4);
  return v;
}

int64_t ShardReader::first_token_at_least(uint32_t limit) const {
  const unsigned char* p = map_ + kShardHeaderBytes;
  const int64_t n = header_.num_tokens;
  auto scan = [&](auto word) -> int64_t {
    using Word = decltype(word);
    if (uint64_t(limit) > uint64_t(Word(~Word(0)))) return -1;  // every id of this width fits
    for (int64_t i = 0; i < n; ++i) {
      Word v;
      std::memcpy(&v, p + sizeof(Word) * size_t(i), sizeof(Word));
      if (v >= limit) return i;
    }
    return -1;
  };
  return header_.width == TokenWidth::kUint16 ? scan(uint16_t{}) : scan(uint32_t{});
}

void check_shard_ids_below(const std::vector<std::string>& shards, int64_t vocab_size) {
  for (const std::string& path : shards) {
    const ShardReader r(path);
    const int64_t at = r.first_token_at_least(uint32_t(std::min<int64_t>(vocab_size, UINT32_MAX)));
    if (at < 0) continue;
    throw Error(ErrorKind::kData,
                str("token ", at, " (byte offset ", kShardHeaderBytes + size_t(at) * token_width_bytes(r.width()),
                    ") has id ", r.token(at), ", outside the model's vocabulary [0, ", vocab_size, ")"),
                path,
                "the data was tokenized for another vocabulary: encode it with the model's tokenizer, or set "
                "model.vocab_size to the tokenizer's (`topotrain data inspect` shows the shard's id range)");
  }
}

void ShardReader::copy_tokens(int64_t begin, int64_t count, int32_t* out) const {
  TT_ASSERT(map_ && begin >= 0 && count >= 0 && begin + count <= header_.num_tokens, "token range [", begin, ", ",
            begin + count, ") outside [0, ", header_.num_tokens, ") of ", path_);
  const unsigned char* p = map_ + kShardHeaderBytes;
  if (header_.width == TokenWidth::kUint16) {
    const unsigned char* src = p + 2 * static_cast<size_t>(begin);
    for (int64_t i = 0; i < count; ++i) {
      uint16_t v;
      std::memcpy(&v, src + 2 * i, 2);
      out[i] = v;
    }
    return;
  }
  std::memcpy(out, p + 4 * static_cast<size_t>(begin), static_cast<size_t>(count) * 4);
  for (int64_t i = 0; i < count; ++i)
    if (out[i] < 0)
      throw Error(ErrorKind::kData,
                  str("token id ", static_cast<uint32_t>(out[i]), " at position ", begin + i, " does not fit int32"),
                  path_, "the shard is corrupt or not a token shard; re-run the data prep");
}

// ---- resolve_shards -----------------------------------------------------------------------------

std::vector<std::string> resolve_shards(const std::string& spec) {
  std::vector<std::string> out;
  if (spec.empty())
    throw Error(ErrorKind::kData, "empty shard spec", "",
                "pass a shard file, a directory of *.bin shards or a glob pattern");
  if (spec.find_first_of("*?[") != std::string::npos) {
    glob_t g;
    int rc = ::glob(spec.c_str(), 0, nullptr, &g);
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i)
        if (is_regular_file(g.gl_pathv[i])) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (out.empty())
      throw Error(ErrorKind::kData, "glob pattern matches no shard files", spec,
                  "check the pattern (quote it so the shell does not expand it) and the directory");
  } else if (is_directory(spec)) {
    DIR* dir = ::opendir(spec.c_str());
    if (!dir) throw Error(ErrorKind::kData, "cannot list directory: " + errno_text(), spec, "check permissions");
    std::string base = ends_with(spec, "/") ? spec : spec + "/";
    while (struct dirent* e = ::readdir(dir)) {
      std::string name = e->d_name;
      if (ends_with(name, ".bin") && is_regular_file(base + name)) out.push_back(base + name);
    }
    ::closedir(dir);
    if (out.empty())
      throw Error(ErrorKind::kData, "directory contains no *.bin shard files", spec,
                  "point at the directory holding the shards, or create them with `topotrain data synth`");
  } else if (is_regular_file(spec)) {
    out.push_back(spec);
  } else {
    throw Error(ErrorKind::kData, "no such shard file or directory", spec,
                "check the path; a glob pattern such as 'dir/train_*.bin' is accepted too");
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tt::data
