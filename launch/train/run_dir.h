// The run directory of `topotrain train` (logging.run_dir) holds one run, written by one job.
// Design: rank 0 takes <run_dir>/.lock with flock(2) before it writes anything there, so a second
// job into the same directory refuses instead of interleaving metrics and checkpoints; the kernel
// drops the lock when its holder dies, however it dies, so a killed run never blocks the next one.
// A fresh run (no --resume) refuses a directory that already holds a run — it would truncate the
// metrics and its checkpoints would be pruned among the old run's — unless told to move the old
// run's files aside (--overwrite), into <run_dir>.previous-<k>.
#pragma once

#include <string>

namespace tt {

class RunDirLock {
 public:
  // Creates run_dir when missing and locks it; throws tt::Error(kConfig) naming the holder's PID,
  // host and start time when another process holds the lock.
  explicit RunDirLock(const std::string& run_dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

enum class RunStart { kFresh, kResume, kOverwrite };

// What a previous run left in run_dir ("" when none): e.g. "checkpoints up to step 20,
// metrics.jsonl (20 lines), config.pbtxt".
std::string describe_existing_run(const std::string& run_dir);

// Readies run_dir (locked by the caller) for a run that starts as `start`: kFresh throws
// tt::Error(kConfig) when the directory holds a run, kOverwrite moves that run's files into
// <run_dir>.previous-<k> (the first free k) and returns that path ("" when there was nothing to
// move), kResume changes nothing.
std::string prepare_run_dir(const std::string& run_dir, RunStart start);

}  // namespace tt
