// MetricsSink: resume-time filtering of metrics.jsonl plus O_APPEND line writes. The filter needs
// only each record's top-level "step", found by a minimal scanner rather than a JSON parser.
#include "core/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/fs.h"
#include "core/logging.h"

namespace tt {

namespace {

// Index just past the JSON string starting at s[i] == '"', or npos when unterminated.
size_t skip_string(const std::string& s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '"')
      return i + 1;
  }
  return std::string::npos;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Rewrites the file at path keeping the records that belong before the resume point.
void truncate_after(const std::string& path, int64_t resume_after_step) {
  if (::access(path.c_str(), F_OK) != 0) return;  // nothing to resume from
  const std::string content = read_file_to_string(path);
  std::string kept;
  size_t dropped = 0;
  bool dropping = false;
  for (size_t pos = 0; pos < content.size();) {
    size_t nl = content.find('\n', pos);
    if (nl == std::string::npos) {
      log_warn("dropping a partial last record in ", path, " (no newline; the run was interrupted mid-write)");
      ++dropped;
      break;
    }
    const std::string line = content.substr(pos, nl - pos);
    pos = nl + 1;
    const auto step = json_line_step(line);
    if (step) dropping = *step > resume_after_step;
    if (dropping || line.empty()) {
      ++dropped;
      continue;
    }
    kept += line;
    kept += '\n';
  }
  if (dropped == 0) return;
  log_info("metrics: resuming after step ", resume_after_step, ", dropped ", dropped, " record(s) from ", path);
  atomic_write_string(path, kept);
}

}  // namespace

std::optional<int64_t> json_line_step(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && is_space(line[i])) ++i;
  if (i >= line.size() || line[i] != '{') return std::nullopt;
  int depth = 0;
  bool expect_key = false;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      const size_t end = skip_string(line, i);
      if (end == std::string::npos) return std::nullopt;
      if (depth == 1 && expect_key) {
        const bool is_step = line.compare(i, end - i, "\"step\"") == 0;
        size_t j = end;
        while (j < line.size() && is_space(line[j])) ++j;
        if (j >= line.size() || line[j] != ':') return std::nullopt;
        ++j;
        while (j < line.size() && is_space(line[j])) ++j;
        if (is_step) {
          const char* begin = line.c_str() + j;
          char* stop = nullptr;
          errno = 0;
          long long v = std::strtoll(begin, &stop, 10);
          if (stop == begin || errno != 0 || *stop == '.' || *stop == 'e' || *stop == 'E') return std::nullopt;
          return int64_t(v);
        }
        expect_key = false;
        i = j - 1;
        continue;
      }
      i = end - 1;
    } else if (c == '{' || c == '[') {
      ++depth;
      expect_key = (c == '{' && depth == 1);
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      expect_key = true;
    }
  }
  return std::nullopt;
}

MetricsSink::MetricsSink(const std::string& path, int64_t resume_after_step) : path_(path) {
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  if (resume_after_step < 0)
    flags |= O_TRUNC;
  else
    truncate_after(path, resume_after_step);
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0)
    throw Error(ErrorKind::kRuntime, std::string("cannot open metrics file: ") + std::strerror(errno), path,
                "check that the run directory exists and is writable");
}

MetricsSink::~MetricsSink() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsSink::write(const JsonLine& record) {
  const std::string line = record.str() + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0)
      throw Error(ErrorKind::kRuntime, std::string("cannot write metrics: ") + std::strerror(errno), path_,
                  errno == ENOSPC ? "the disk is full" : "check the run directory's filesystem");
    p += w;
    left -= size_t(w);
  }
}

}  // namespace tt
