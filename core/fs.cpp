// POSIX implementation of the fs helpers: open/write/fsync/rename on raw descriptors (no stdio
// buffering to lose), EINTR and short writes retried, errno turned into tt::Error with a hint.
#include "core/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tt {

namespace {

constexpr size_t kBufferBytes = 1 << 20;

std::string errno_text(int err) { return std::strerror(err); }

std::string io_hint(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return "the disk is full; free space or point the run directory elsewhere";
    case EACCES:
    case EPERM:
    case EROFS:
      return "check permissions on the directory (is it read-only?)";
    case ENOENT:
      return "the parent directory does not exist; create it first";
    default:
      return "check that the path is on a writable, healthy filesystem";
  }
}

[[noreturn]] void throw_io(const std::string& what, const std::string& path, int err,
                           ErrorKind kind = ErrorKind::kRuntime) {
  throw Error(kind, what + ": " + errno_text(err), path, io_hint(err));
}

void fsync_dir(const std::string& path, ErrorKind kind) {
  std::string dir = parent_dir(path);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_io("cannot open directory " + dir + " to sync it", path, errno, kind);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some filesystems cannot sync a directory; the rename itself has still happened.
  if (rc != 0 && err != EINVAL && err != ENOTSUP) throw_io("cannot sync directory " + dir, path, err, kind);
}

}  // namespace

FileWriter::FileWriter(int fd, std::string path, ErrorKind kind)
    : fd_(fd), path_(std::move(path)), kind_(kind), buffer_(kBufferBytes) {}

void FileWriter::write_fd(const char* p, size_t n, int64_t at) {
  while (n > 0) {
    const size_t k = std::min<size_t>(n, size_t(1) << 30);
    const ssize_t w = at < 0 ? ::write(fd_, p, k) : ::pwrite(fd_, p, k, off_t(at));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw_io("write failed", path_, errno, kind_);
    }
    p += w;
    n -= size_t(w);
    if (at >= 0) at += w;
  }
}

void FileWriter::flush() {
  if (used_) write_fd(buffer_.data(), used_);
  used_ = 0;
}

void FileWriter::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  offset_ += n;
  if (used_ + n <= buffer_.size()) {
    if (n) std::memcpy(buffer_.data() + used_, p, n);
    used_ += n;
    return;
  }
  flush();
  if (n >= buffer_.size()) {
    write_fd(p, n);
  } else {
    std::memcpy(buffer_.data(), p, n);
    used_ = n;
  }
}

void FileWriter::patch(uint64_t offset, const void* data, size_t n) {
  TT_ASSERT(offset + n <= offset_, "patching bytes not yet written");
  flush();
  write_fd(static_cast<const char*>(data), n, int64_t(offset));
}

void FileWriter::write_zeros(size_t n) {
  static const char kZeros[64] = {};
  while (n > 0) {
    size_t k = std::min(n, sizeof(kZeros));
    write(kZeros, k);
    n -= k;
  }
}

void atomic_write_file(const std::string& path, const std::function<void(FileWriter&)>& writer_fn, ErrorKind kind) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("cannot create temporary file " + tmp, path, errno, kind);
  auto abandon = [&] {
    if (fd >= 0) ::close(fd);
    fd = -1;
    ::unlink(tmp.c_str());
  };
  try {
    FileWriter writer(fd, path, kind);
    writer_fn(writer);
    writer.flush();
    if (::fsync(fd) != 0) throw_io("fsync failed", path, errno, kind);
    int rc = ::close(fd);
    fd = -1;
    if (rc != 0) throw_io("close failed", path, errno, kind);
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw_io("cannot rename " + tmp + " over it", path, errno, kind);
  } catch (const Error&) {
    abandon();
    throw;
  } catch (const std::exception& e) {
    abandon();
    throw Error(kind, std::string("writing failed: ") + e.what(), path,
                "the previous file (if any) was left untouched");
  } catch (...) {
    abandon();
    throw Error(kind, "writing failed with an unknown exception", path,
                "the previous file (if any) was left untouched");
  }
  fsync_dir(path, kind);
}

void atomic_write_string(const std::string& path, std::string_view content) {
  atomic_write_file(path, [&](FileWriter& w) { w.write(content); });
}

void ensure_dir(const std::string& path, ErrorKind kind) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return;
  fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path)) {
    std::string why = ec ? ec.message() : "a component exists and is not a directory";
    throw Error(kind, "cannot create directory: " + why, path,
                "check that every component of the path is a directory you may write to");
  }
}

std::string read_file_to_string(const std::string& path, ErrorKind kind) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw Error(kind, "cannot open: " + errno_text(err), path,
                err == ENOENT ? "check the path" : "check permissions on the file");
  }
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw Error(kind, "read failed: " + errno_text(err), path, "check the filesystem");
    }
    if (r == 0) break;
    out.append(buf, size_t(r));
  }
  ::close(fd);
  return out;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string parent_dir(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace tt
