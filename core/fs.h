// Small POSIX file helpers for everything topotrain persists (checkpoints, metrics, tokenizers).
// Design: a file is never modified in place; atomic_write_file writes a sibling temp file, fsyncs
// it, renames it over the target and fsyncs the directory, so a reader (or a crash) sees either
// the complete old file or the complete new one — never a mix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tt {

// Sequential writer handed to atomic_write_file's callback. Small writes are buffered; large ones
// go straight to the descriptor. Every method throws tt::Error(kind) on an I/O failure (the kind
// atomic_write_file was given). Not thread-safe; valid only inside the callback.
class FileWriter {
 public:
  FileWriter(int fd, std::string path, ErrorKind kind = ErrorKind::kRuntime);
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // Writes n zero bytes (alignment padding).
  void write_zeros(size_t n);
  // Bytes written so far (the current file offset).
  uint64_t offset() const { return offset_; }
  // Pushes the buffer to the kernel (not to disk; atomic_write_file does the fsync).
  void flush();
  // Overwrites n bytes already written at `offset` (a field known only after what follows it).
  void patch(uint64_t offset, const void* data, size_t n);

 private:
  void write_fd(const char* p, size_t n, int64_t at = -1);  // at >= 0: at that offset (pwrite)

  int fd_;
  std::string path_;  // the final path, for messages
  ErrorKind kind_;
  std::vector<char> buffer_;
  size_t used_ = 0;
  uint64_t offset_ = 0;
};

// Replaces `path` atomically with what writer_fn writes: "<path>.tmp.<pid>" is written, fsynced,
// renamed over `path`, and the directory is fsynced. If writer_fn throws or any step fails, the temp
// file is removed, an existing file at `path` is left untouched, and tt::Error(kind, what,
// where=path, hint) is thrown (a tt::Error thrown by writer_fn propagates unchanged). `kind` lets a
// caller report its file's I/O failures as its own kind (a checkpoint that cannot be written is a
// checkpoint error). The parent directory must exist (see ensure_dir). Concurrent writers of one
// path in one process must serialize themselves.
void atomic_write_file(const std::string& path, const std::function<void(FileWriter&)>& writer_fn,
                       ErrorKind kind = ErrorKind::kRuntime);
// atomic_write_file for an in-memory string.
void atomic_write_string(const std::string& path, std::string_view content);

// mkdir -p. Throws tt::Error(kind) naming the path when it cannot be created or a component exists
// and is not a directory (a checkpoint folder that cannot be made is a checkpoint error).
void ensure_dir(const std::string& path, ErrorKind kind = ErrorKind::kRuntime);

// Whole-file read; throws tt::Error(kind, ..., where=path) when the file cannot be read.
std::string read_file_to_string(const std::string& path, ErrorKind kind = ErrorKind::kRuntime);

// stat(2) follows links: true when `path` names an existing directory / regular file.
bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);

// Directory part of a path ("." when there is none).
std::string parent_dir(const std::string& path);

}  // namespace tt
