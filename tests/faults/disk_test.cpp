// The run directory's filesystem fails under a real 2-rank run: it fills up during a checkpoint
// write (exit 4 naming the checkpoint, the previous checkpoints intact, `--resume` after freeing
// space reproduces the reference), or it is read-only (a clear error, a non-zero exit, and every
// file of the run it holds unchanged and still resumable).
//
// Design: the filesystem is a tmpfs mounted for the test, sized from the reference's checkpoint
// so that exactly two checkpoints fit and the third runs out of space part-way through its data;
// "freeing space" is a remount with a larger size. Tests skip when mount is not permitted.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "core/checkpoint_io.h"
#include "tests/faults/fault_run.h"
#include "tests/process_util.h"

namespace tt::test {
namespace {

namespace fs = std::filesystem;

// A tmpfs mounted on a fresh directory for the object's lifetime.
class TmpfsMount {
 public:
  TmpfsMount(const std::string& dir, uint64_t bytes) : dir_(dir) {
    fs::create_directories(dir);
    const auto r = run_command("mount -t tmpfs -o size=" + std::to_string(bytes) + " tmpfs " + dir);
    mounted_ = r.exit_code == 0;
    error_ = r.output;
  }
  ~TmpfsMount() {
    if (mounted_) run_command("umount -l " + dir_);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  // mount -o remount,<options> (e.g. "size=64m", "ro", "rw").
  // A killed job's ranks may still be closing their files for a moment ("mount point is busy"):
  // retry for up to 10 s.
  bool remount(const std::string& options) {
    CommandResult r;
    for (int attempt = 0; attempt < 40; ++attempt) {
      r = run_command("mount -o remount," + options + " " + dir_);
      if (r.exit_code == 0 || r.output.find("busy") == std::string::npos) break;
      run_command("sleep 0.25");
    }
    EXPECT_EQ(r.exit_code, 0) << "remount," << options << ": " << r.output;
    return r.exit_code == 0;
  }

 private:
  std::string dir_, error_;
  bool mounted_ = false;
};

// path -> content of every regular file below dir.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().string()] = read_file(e.path().string());
  return files;
}

class RunDirFilesystem : public FaultRunTest {};

TEST_F(RunDirFilesystem, DiskFullDuringACheckpointExits4NamingItAndKeepsThePreviousOnes) {
  FaultRunSpec spec;
  spec.steps = 16;
  const std::string reference = run_reference(spec);
  ASSERT_FALSE(HasFailure());
  const uint64_t ckpt_bytes = fs::file_size(checkpoint_path(reference + "/checkpoints", 4));
  // Two checkpoints, half of a third, and room for metrics.jsonl and config.pbtxt.
  TmpfsMount disk(dir_.file("disk"), 2 * ckpt_bytes + ckpt_bytes / 2 + (64 << 10));
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.error();
  const std::string run = dir_.file("disk/run"), ckpt_dir = run + "/checkpoints";

  auto full = run_command("timeout -s KILL 120 " + train_command(run, spec, false));
  EXPECT_EQ(full.exit_code, 4) << full.output;
  const std::string third = checkpoint_path(ckpt_dir, 12);
  EXPECT_NE(full.output.find(third), std::string::npos) << "the error must name " << third << ":\n" << full.output;
  EXPECT_NE(full.output.find("No space left on device"), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("checkpoint error"), std::string::npos) << full.output;

  // The two before it are complete, nothing else is in the directory (the partial file is gone),
  // and the metrics end at the step that could not be saved.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(ckpt_dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"step_00000004.ckpt", "step_00000008.ckpt"}));
  for (int step : {4, 8}) {
    const std::string path = checkpoint_path(ckpt_dir, step);
    EXPECT_NO_THROW(verify_checkpoint(path)) << path;
    expect_same_checkpoint(checkpoint_path(reference + "/checkpoints", step), path);
  }
  EXPECT_EQ(metric_by_step(run + "/metrics.jsonl").size(), 12u);

  ASSERT_TRUE(disk.remount("size=64m"));  // space freed
  auto resumed = run_command("timeout -s KILL 120 " + train_command(run, spec, true));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("step_00000008.ckpt at step 8"), std::string::npos) << resumed.output;
  expect_same_metrics(reference, run, spec.steps);
  expect_same_final_state(reference, run, spec.steps);
}

TEST_F(RunDirFilesystem, ReadOnlyRunDirFailsClearlyAndLosesNothing) {
  FaultRunSpec spec;
  spec.steps = 16;
  TmpfsMount disk(dir_.file("disk"), 64 << 20);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.error();
  const std::string run = dir_.file("disk/run");

  // A run that stopped part-way (its whole job killed right after the checkpoint of step 8).
  {
    BackgroundJob job(train_command(run, spec, false), dir_.file("first.log"));
    ASSERT_TRUE(job.started());
    ASSERT_TRUE(job.wait_until(
        [&] { return std::regex_search(job.output(), std::regex("checkpoint \\S*step_00000008\\.ckpt \\(")); }, 60))
        << job.output();
    job.kill_all();
    job.wait(30);
  }
  ASSERT_EQ(newest_checkpoint_step(run), 8);
  const auto before = snapshot(run);
  ASSERT_TRUE(disk.remount("ro"));

  // Resuming into it, and a fresh run next to it: an error that says what and where, no crash.
  const std::string fresh = dir_.file("disk/fresh");
  for (const auto& [what, command] : {std::pair<std::string, std::string>{"resume", train_command(run, spec, true)},
                                      {"fresh run", train_command(fresh, spec, false)}}) {
    const auto r = run_command("timeout -s KILL 60 " + command);
    EXPECT_NE(r.exit_code, 0) << what << ":\n" << r.output;
    EXPECT_LT(r.exit_code, 70) << what << " must fail with an error, not crash:\n" << r.output;
    EXPECT_NE(r.output.find("Read-only file system"), std::string::npos) << what << ":\n" << r.output;
    EXPECT_NE(r.output.find(what == "resume" ? run : fresh), std::string::npos)
        << what << ": the error must name the directory:\n"
        << r.output;
  }
  EXPECT_EQ(snapshot(run), before) << "a file of the run changed on a read-only filesystem?";

  ASSERT_TRUE(disk.remount("rw"));
  const auto resumed = run_command("timeout -s KILL 120 " + train_command(run, spec, true));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("step_00000008.ckpt at step 8"), std::string::npos) << resumed.output;
  EXPECT_EQ(metric_by_step(run + "/metrics.jsonl").size(), size_t(spec.steps));
}

}  // namespace
}  // namespace tt::test
