// Checkpoint container I/O. One parser serves both the reader (keeps each section in its own
// buffer) and verify_checkpoint (streams through a fixed scratch buffer); both check the cheap
// structural facts first (magic, version, end marker — a file cut short fails here without being
// read) and then every CRC in one sequential pass.
#include "core/checkpoint_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/logging.h"

namespace tt {

namespace {

constexpr char kMagic[8] = {'T', 'T', 'C', 'K', 'P', 'T', '0', '1'};
constexpr char kEndMagic[8] = {'T', 'T', 'C', 'K', 'E', 'N', 'D', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 16;  // magic, version, section count
constexpr uint64_t kFooterBytes = 12;  // crc, end magic
constexpr uint32_t kMaxNameBytes = 4096;
constexpr size_t kChunkBytes = size_t(4) << 20;  // CRC'd while still in cache

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}
size_t pad_to_8(uint64_t offset) { return size_t((8 - offset % 8) % 8); }

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

std::string corrupt_hint(const std::string& path) {
  return "the file is corrupt or was cut short; resume from an earlier checkpoint in " + parent_dir(path);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::kCheckpoint, what, path, corrupt_hint(path));
}

// n bytes at `at` of an open checkpoint file; running short is a corrupt or changed file.
void pread_all(int fd, void* dst, size_t n, uint64_t at, const std::string& path, const std::string& what) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, off_t(at));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(path, "cannot read " + what + ": " + std::strerror(errno));
    if (r == 0) fail(path, "cannot read " + what + ": the file ends early");
    p += r;
    n -= size_t(r);
    at += uint64_t(r);
  }
}

// Sequential reads of one descriptor that know the file size, so running past the end is reported
// as truncation instead of a short read.
class FdReader {
 public:
  explicit FdReader(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      int err = errno;
      throw Error(ErrorKind::kCheckpoint, std::string("cannot open checkpoint: ") + std::strerror(err), path,
                  err == ENOENT ? "check the path; checkpoints are named step_<N>.ckpt in the run directory"
                                : "check permissions on the file");
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      int err = errno;
      ::close(fd_);
      fail(path, std::string("cannot stat checkpoint: ") + std::strerror(err));
    }
    size_ = uint64_t(st.st_size);
  }
  ~FdReader() { ::close(fd_); }
  FdReader(const FdReader&) = delete;
  FdReader& operator=(const FdReader&) = delete;

  uint64_t size() const { return size_; }
  uint64_t offset() const { return offset_; }

  void read_exact(void* dst, size_t n, const char* what) {
    if (n > size_ - offset_)
      fail(path_, std::string("checkpoint is truncated: ") + what + " runs past the end of the file (" +
                      std::to_string(size_) + " bytes)");
    char* p = static_cast<char*>(dst);
    size_t left = n;
    while (left > 0) {
      ssize_t r = ::read(fd_, p, std::min<size_t>(left, size_t(1) << 30));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail(path_, std::string("read failed: ") + std::strerror(errno));
      if (r == 0) fail(path_, std::string("checkpoint is truncated while reading ") + what);
      p += r;
      left -= size_t(r);
    }
    offset_ += n;
  }

  void pread_exact(void* dst, size_t n, uint64_t at) { pread_all(fd_, dst, n, at, path_, "the checkpoint footer"); }
  // A second descriptor of the same open file (stays valid after this reader closes its own).
  std::shared_ptr<const int> share_fd() const {
    const int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) fail(path_, std::string("cannot duplicate the checkpoint's descriptor: ") + std::strerror(errno));
    return std::shared_ptr<const int>(new int(fd), [](const int* p) {
      ::close(*p);
      delete p;
    });
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0, offset_ = 0;
};

}  // namespace

// Parses and verifies the file. With `out`, each section is listed and the bytes of those `keep`
// accepts (all, without keep) are kept; the others, and all without `out`, are streamed through a
// scratch buffer.
void parse_checkpoint(const std::string& path, std::vector<CheckpointReader::Section>* out,
                      const std::function<bool(const std::string&)>& keep, std::shared_ptr<const int>* fd_out) {
  FdReader in(path);
  const uint64_t size = in.size();
  char head[kHeaderBytes];
  if (size < sizeof(kMagic)) fail(path, "checkpoint is truncated: only " + std::to_string(size) + " bytes");
  in.read_exact(head, size < kHeaderBytes ? sizeof(kMagic) : kHeaderBytes, "the header");
  if (std::memcmp(head, kMagic, sizeof(kMagic)) != 0)
    throw Error(ErrorKind::kCheckpoint, "not a topotrain checkpoint (bad magic; expected \"TTCKPT01\")", path,
                "the file is not a checkpoint or its start is corrupt; resume from an earlier checkpoint in " +
                    parent_dir(path));
  if (size < kHeaderBytes + kFooterBytes)
    fail(path, "checkpoint is truncated: only " + std::to_string(size) + " bytes");
  const uint32_t version = get_u32(head + 8);
  if (version != kVersion)
    throw Error(ErrorKind::kCheckpoint,
                "unsupported checkpoint version " + std::to_string(version) + " (this build reads version " +
                    std::to_string(kVersion) + ")",
                path, "use the topotrain version that wrote it, or resume from an earlier checkpoint");
  char footer[kFooterBytes];
  in.pread_exact(footer, kFooterBytes, size - kFooterBytes);
  if (std::memcmp(footer + 4, kEndMagic, sizeof(kEndMagic)) != 0)
    fail(path, "checkpoint is incomplete: the end marker \"TTCKEND1\" is missing (the write was cut short?)");

  uint32_t total = crc32c(head, kHeaderBytes);
  const uint32_t count = get_u32(head + 12);
  const uint64_t body_end = size - kFooterBytes;
  if (count > (body_end - kHeaderBytes) / 16)
    fail(path, "checkpoint header is corrupt: it claims " + std::to_string(count) + " sections");

  std::vector<char> scratch;
  std::vector<std::string> seen;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string which = "the header of section #" + std::to_string(i);
    char buf[12];
    in.read_exact(buf, 4, which.c_str());
    const uint32_t name_len = get_u32(buf);
    if (name_len == 0 || name_len > kMaxNameBytes || name_len > body_end - in.offset())
      fail(path, which + " is corrupt (name length " + std::to_string(name_len) + ")");
    std::string name(name_len, '\0');
    in.read_exact(name.data(), name_len, which.c_str());
    in.read_exact(buf + 0, 12, which.c_str());
    const uint64_t len = get_u64(buf);
    const uint32_t stored = get_u32(buf + 8);
    std::string hdr;
    put_u32(hdr, name_len);
    hdr += name;
    hdr.append(buf, 12);
    char zeros[8];
    const size_t pad = pad_to_8(in.offset());
    in.read_exact(zeros, pad, which.c_str());
    hdr.append(zeros, pad);
    total = crc32c_update(total, hdr.data(), hdr.size());
    // read_exact bounds reads by the file, not by the footer: a section header may have run into
    // the footer, and body_end - offset would then wrap (and admit any length).
    if (in.offset() > body_end) fail(path, "checkpoint is corrupt: " + which + " runs into the footer");
    if (len > body_end - in.offset())
      fail(path, "section '" + name + "' claims " + std::to_string(len) + " bytes but only " +
                     std::to_string(body_end - in.offset()) + " remain before the footer");
    if (std::find(seen.begin(), seen.end(), name) != seen.end())
      fail(path, "checkpoint is corrupt: section '" + name + "' appears twice");
    seen.push_back(name);

    const std::string what = "section '" + name + "'";
    uint32_t crc = 0;
    CheckpointReader::Section section{name, {}, in.offset(), len, out && (!keep || keep(name))};
    if (section.kept) section.data.resize(size_t(len));
    if (!section.kept && scratch.empty()) scratch.resize(kChunkBytes);
    for (uint64_t done = 0; done < len;) {
      const size_t n = size_t(std::min<uint64_t>(kChunkBytes, len - done));
      char* dst = section.kept ? section.data.data() + done : scratch.data();
      in.read_exact(dst, n, what.c_str());
      crc = crc32c_update(crc, dst, n);
      done += n;
    }
    if (crc != stored)
      fail(path,
           "checksum mismatch in section '" + name + "' (stored " + hex32(stored) + ", computed " + hex32(crc) + ")");
    total = crc32c_combine(total, crc, len);
    if (fd_out && !section.kept && !*fd_out) *fd_out = in.share_fd();  // read_range reads what was verified
    if (out) out->push_back(std::move(section));
  }
  if (in.offset() != body_end)
    fail(path, "checkpoint is corrupt: " + std::to_string(body_end - in.offset()) +
                   " unexpected bytes after the last section");
  const uint32_t stored_total = get_u32(footer);
  if (stored_total != total)
    fail(path, "checksum mismatch in the footer (stored " + hex32(stored_total) + ", computed " + hex32(total) +
                   "): the header or a section header is damaged");
}

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& name : names) s += (s.empty() ? "" : ", ") + name;
  return s.empty() ? "none" : s;
}

}  // namespace

// ---- writer ------------------------------------------------------------------------------------

void CheckpointWriter::add_section(const std::string& name, const char* data, size_t bytes, size_t owned_index) {
  TT_ASSERT(!name.empty() && name.size() <= kMaxNameBytes, "checkpoint section name must be 1..4096 bytes");
  for (const Section& s : sections_) TT_ASSERT(s.name != name, "duplicate checkpoint section '", name, "'");
  TT_ASSERT(owned_index != std::string::npos || data != nullptr || bytes == 0, "section '", name, "' has null data");
  sections_.push_back({name, data, bytes, owned_index, {}});
}

void CheckpointWriter::add_streamed(const std::string& name, size_t bytes, std::function<void(const Sink&)> produce) {
  TT_ASSERT(produce, "streamed section '", name, "' has no producer");
  add_section(name, nullptr, 0, std::string::npos);
  sections_.back().bytes = bytes;
  sections_.back().produce = std::move(produce);
}

void CheckpointWriter::add(const std::string& name, const void* data, size_t bytes) {
  add_section(name, static_cast<const char*>(data), bytes, std::string::npos);
}

void CheckpointWriter::add_string(const std::string& name, const std::string& content) {
  add_owned(name, std::string(content));
}

void CheckpointWriter::add_owned(const std::string& name, std::string&& content) {
  owned_.push_back(std::move(content));
  // owned_ may reallocate later; data is looked up through owned_index at write time.
  add_section(name, nullptr, owned_.back().size(), owned_.size() - 1);
}

void CheckpointWriter::write(const std::string& path) const {
  const auto write_sections = [&](FileWriter& w) {
    std::string hdr(kMagic, sizeof(kMagic));
    put_u32(hdr, kVersion);
    put_u32(hdr, uint32_t(sections_.size()));
    w.write(hdr);
    uint32_t total = crc32c(hdr.data(), hdr.size());
    for (const Section& s : sections_) {
      const char* data = s.owned_index == std::string::npos ? s.data : owned_[s.owned_index].data();
      uint32_t crc = s.produce ? 0 : crc32c(data, s.bytes);  // a streamed section's is patched in below
      hdr.clear();
      put_u32(hdr, uint32_t(s.name.size()));
      hdr += s.name;
      put_u64(hdr, s.bytes);
      const uint64_t crc_offset = w.offset() + hdr.size();
      put_u32(hdr, crc);
      hdr.append(pad_to_8(w.offset() + hdr.size()), '\0');
      w.write(hdr);
      if (s.produce) {
        uint64_t produced = 0;
        s.produce([&](const void* p, size_t n) {
          if (produced + n > s.bytes)
            throw Error(ErrorKind::kInternal, str("section '", s.name, "' produced more than its ", s.bytes, " bytes"),
                        path);
          crc = crc32c_update(crc, p, n);
          w.write(p, n);
          produced += n;
        });
        if (produced != s.bytes)
          throw Error(ErrorKind::kInternal,
                      str("section '", s.name, "' produced ", produced, " of its ", s.bytes, " bytes"), path);
        std::string field;
        put_u32(field, crc);
        w.patch(crc_offset, field.data(), field.size());
        hdr.replace(4 + s.name.size() + 8, 4, field);  // the header as it ends up on disk
      } else {
        w.write(data, s.bytes);
      }
      total = crc32c_update(total, hdr.data(), hdr.size());
      total = crc32c_combine(total, crc, s.bytes);
    }
    std::string footer;
    put_u32(footer, total);
    footer.append(kEndMagic, sizeof(kEndMagic));
    w.write(footer);
  };
  // One that cannot be written (disk full, read-only directory) is a checkpoint error: exit 4.
  atomic_write_file(path, write_sections, ErrorKind::kCheckpoint);
}

// ---- reader ------------------------------------------------------------------------------------

CheckpointReader::CheckpointReader(const std::string& path) : path_(path) {
  parse_checkpoint(path, &sections_, {}, nullptr);
}

CheckpointReader::CheckpointReader(const std::string& path, const std::function<bool(const std::string&)>& keep)
    : path_(path) {
  parse_checkpoint(path, &sections_, keep, &fd_);
}

bool CheckpointReader::has(const std::string& name) const {
  for (const auto& s : sections_)
    if (s.name == name) return true;
  return false;
}

const CheckpointReader::Section& CheckpointReader::find(const std::string& name) const {
  for (const auto& s : sections_)
    if (s.name == name) return s;
  throw Error(ErrorKind::kCheckpoint, "checkpoint has no section '" + name + "' (present: " + join_names(names()) + ")",
              path_,
              "the checkpoint was written by a different topotrain version or configuration "
              "(e.g. a different optimizer); resume with the matching config");
}

const std::string& CheckpointReader::bytes(const std::string& name) const {
  const Section& s = find(name);
  TT_ASSERT(s.kept, "checkpoint section '", name, "' was not kept in memory: read it with read_range");
  return s.data;
}

uint64_t CheckpointReader::section_bytes(const std::string& name) const { return find(name).bytes; }

void CheckpointReader::read_range(const std::string& name, uint64_t offset, void* dst, size_t bytes) const {
  const Section& s = find(name);
  if (offset > s.bytes || bytes > s.bytes - offset)
    throw Error(ErrorKind::kCheckpoint,
                str("bytes [", offset, ", ", offset + bytes, ") are past the end of section '", name, "' (", s.bytes,
                    " bytes)"),
                path_, "the checkpoint was written for a different model shape; check the model config");
  if (bytes == 0) return;
  if (s.kept) {
    std::memcpy(dst, s.data.data() + offset, bytes);
    return;
  }
  // The descriptor the constructor verified: the same file even if the path was replaced since.
  pread_all(*fd_, dst, bytes, s.file_offset + offset, path_, "section '" + name + "'");
}

void CheckpointReader::expect_bytes(const std::string& name, uint64_t bytes) const {
  const uint64_t held = section_bytes(name);
  if (held != bytes)
    throw Error(ErrorKind::kCheckpoint,
                "section '" + name + "' holds " + std::to_string(held) + " bytes but " + std::to_string(bytes) +
                    " were expected",
                path_,
                "the checkpoint was written for a different model shape or optimizer; check that the "
                "model config matches the run that wrote it");
}

void CheckpointReader::copy_to(const std::string& name, void* dst, size_t expected_bytes) const {
  expect_bytes(name, expected_bytes);
  read_range(name, 0, dst, expected_bytes);
}

std::string CheckpointReader::take(const std::string& name) {
  find(name);
  for (auto it = sections_.begin(); it != sections_.end(); ++it) {
    if (it->name != name) continue;
    TT_ASSERT(it->kept, "checkpoint section '", name, "' was not kept in memory: read it with read_range");
    std::string data = std::move(it->data);
    sections_.erase(it);
    return data;
  }
  return {};
}

std::vector<std::string> CheckpointReader::names() const {
  std::vector<std::string> out;
  out.reserve(sections_.size());
  for (const auto& s : sections_) out.push_back(s.name);
  return out;
}

void verify_checkpoint(const std::string& path) { parse_checkpoint(path, nullptr, {}, nullptr); }

// ---- directory helpers ---------------------------------------------------------------------------

std::string checkpoint_path(const std::string& dir, int64_t step) {
  TT_ASSERT(step >= 0, "checkpoint step must be >= 0, got ", step);
  char name[48];
  std::snprintf(name, sizeof(name), "step_%08lld.ckpt", static_cast<long long>(step));
  return (std::filesystem::path(dir) / name).string();
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  fs::directory_iterator it(dir, ec), end;
  if (ec)
    throw Error(ErrorKind::kCheckpoint, "cannot list checkpoint directory: " + ec.message(), dir,
                "check that it is a readable directory");
  static const std::string kPrefix = "step_", kSuffix = ".ckpt";
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (name.size() <= kPrefix.size() + kSuffix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0 ||
        name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
      continue;
    const std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    out.emplace_back(std::stoll(digits), (fs::path(dir) / name).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string newest_complete_checkpoint(const std::string& dir) {
  const auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      verify_checkpoint(it->second);
      return it->second;
    } catch (const Error& e) {
      log_warn("skipping checkpoint ", it->second, ": ", e.problem());
    }
  }
  return "";
}

void remove_interrupted_checkpoint_writes(const std::string& dir) {
  namespace fs = std::filesystem;
  static const std::string kPrefix = "step_", kMarker = ".ckpt.tmp.";
  const std::string mine = kMarker + std::to_string(::getpid());
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t marker = name.find(kMarker);
    if (name.compare(0, kPrefix.size(), kPrefix) != 0 || marker == std::string::npos ||
        name.compare(marker, std::string::npos, mine) == 0)
      continue;
    if (::unlink(it->path().c_str()) != 0)
      log_warn("cannot delete an interrupted checkpoint write ", it->path().string(), ": ", std::strerror(errno));
    else
      log_info("deleted ", it->path().string(), ", left behind by an interrupted checkpoint write");
  }
}

void prune_checkpoints(const std::string& dir, int keep) {
  if (keep < 0)
    throw Error(ErrorKind::kConfig, "checkpoint keep count must be >= 0, got " + std::to_string(keep), dir,
                "use 0 to keep every checkpoint");
  remove_interrupted_checkpoint_writes(dir);
  if (keep == 0) return;
  const auto all = list_checkpoints(dir);
  if (all.size() <= size_t(keep)) return;
  for (size_t i = 0; i + size_t(keep) < all.size(); ++i) {
    if (::unlink(all[i].second.c_str()) != 0)
      log_warn("cannot delete old checkpoint ", all[i].second, ": ", std::strerror(errno));
    else
      log_debug("deleted old checkpoint ", all[i].second);
  }
}

}  // namespace tt
