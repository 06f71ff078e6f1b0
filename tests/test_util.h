// Shared helpers for the GoogleTest suites: scratch directories, running the CLI binary, and
// locating ../shared data (tests that need it skip with a message when it is absent).
#pragma once

#include <map>
#include <string>

namespace tt::test {

// A fresh empty directory under $TMPDIR, removed (recursively) when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
};

// Runs `build/topotrain <args>` through the shell and captures its output and exit code.
CommandResult run_topotrain(const std::string& args);
// Runs an arbitrary shell command and captures its output and exit code.
CommandResult run_command(const std::string& command);

std::string source_dir();
// ../shared next to the source checkout, or "" when absent.
std::string shared_dir();

// step -> the raw text of `field` in every record of a metrics.jsonl that has both (compare as
// strings: floats are written so that they round-trip bit-exactly).
std::map<int, std::string> metric_by_step(const std::string& metrics_path, const std::string& field = "loss");

// One metrics.jsonl training record: the loss as written (compare as strings for bit-exactness) and
// the communication timings (0 where the record has none).
struct StepMetrics {
  std::string loss;
  double comm_s = 0, exposed_comm_s = 0;
  double peak_memory_bytes = 0;  // rank 0's peak so far
  double param_gather_s = 0;     // ZeRO: time the step waited for parameter gathers
  double loss_value() const;
};
// step -> StepMetrics for every record of a metrics.jsonl that has both "step" and "loss".
std::map<int, StepMetrics> read_step_metrics(const std::string& metrics_path);

void write_file(const std::string& path, const std::string& content);
std::string read_file(const std::string& path);

// Whether `text` (a command's output, a file) contains `part`.
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace tt::test
