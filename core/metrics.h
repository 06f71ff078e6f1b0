// Training metrics as JSON Lines (<run_dir>/metrics.jsonl): one flat object per record, each with
// a "step". Design: every record is one write() on an O_APPEND descriptor, so a crash loses at most
// the record being written; on resume from step S the file is first rewritten (atomically) without
// the records of steps > S, which the resumed run is about to produce again.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "core/json_writer.h"

namespace tt {

class MetricsSink {
 public:
  // resume_after_step < 0: start a fresh file (truncating any existing one).
  // resume_after_step >= 0: keep the existing file's records whose "step" <= resume_after_step
  // (records without a step are kept while they precede the first dropped record; a torn last line
  // without a newline is dropped), rewrite it atomically if anything was dropped, then append.
  // The parent directory must exist. Throws tt::Error(kRuntime) naming the path on I/O failure.
  MetricsSink(const std::string& path, int64_t resume_after_step);
  ~MetricsSink();
  MetricsSink(const MetricsSink&) = delete;
  MetricsSink& operator=(const MetricsSink&) = delete;

  // Appends record.str() + '\n' with one write() (no user-space buffering, so it is visible to
  // readers at once). Thread-safe.
  void write(const JsonLine& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;
};

// The top-level integer "step" of a one-line JSON object, if present (strings and nested values
// are skipped correctly). Exposed for tests and tools that read metrics.jsonl.
std::optional<int64_t> json_line_step(const std::string& line);

}  // namespace tt
