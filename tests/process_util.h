// Process control for the suites that drive real `mpirun topotrain ...` jobs: start one in the
// background with its output in a file, find a rank's pid among mpirun's descendants, wait for a
// condition or the exit, and make sure nothing outlives the test.
//
// Design: mpirun is started directly (fork + exec) so the test knows its pid; ORTE puts every rank
// in its own process group, so "the whole job" is mpirun and its descendants, found by walking
// /proc, never a process group. A rank is recognised by OMPI_COMM_WORLD_RANK in its environment.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace tt::test {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Lines in a file (0 when it does not exist).
size_t count_lines(const std::string& path);

// Every live process below `root` in the process tree.
std::vector<pid_t> descendants(pid_t root);
// The descendant of `root` whose environment says OMPI_COMM_WORLD_RANK=<rank>, or -1.
pid_t find_rank_pid(pid_t root, int rank);
// Live processes (other than this one) with `arg` as one of their command-line arguments: what is
// left of a job once its mpirun is gone (its ranks were reparented away from it).
std::vector<pid_t> processes_with_arg(const std::string& arg);

// A shell command started in the background with stdout+stderr going to a file; SIGKILLed with
// everything it started if still running when destroyed.
class BackgroundJob {
 public:
  BackgroundJob(const std::string& command, const std::string& log_path);
  ~BackgroundJob();
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }
  std::string output() const;
  // Exit code as the shell reports it (128 + signal), or -1 when still running after timeout_s.
  int wait(double timeout_s);
  // True once `ready()` holds; false when the job ended (see ended_early) or timeout_s passed first.
  template <typename Pred>
  bool wait_until(Pred ready, double timeout_s, double poll_s = 0.01) {
    const auto t0 = Clock::now();
    while (seconds_since(t0) < timeout_s) {
      if (ready()) return true;
      if (reap()) return false;
      sleep_s(poll_s);
    }
    return false;
  }
  bool ended_early() const { return done_; }
  int early_exit_code() const { return exit_code_; }
  // SIGKILLs mpirun and every descendant at once (a node that loses power, a cgroup OOM kill).
  void kill_all();

 private:
  bool reap();  // true (and exit_code_ set) once the job has ended
  static void sleep_s(double s);

  std::string log_path_;
  pid_t pid_ = -1;
  bool done_ = false;
  int exit_code_ = -1;
};

}  // namespace tt::test
