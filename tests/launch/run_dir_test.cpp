// The run directory lock and claim: a held lock refuses a second holder naming the first, a dead
// holder's lock is free, a fresh run refuses a directory holding a run, --overwrite moves only the
// run's own files aside.
#include "launch/train/run_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;

TEST(RunDirLock, ASecondHolderIsRefusedNamingTheFirstAndADeadHolderHoldsNothing) {
  test::TempDir dir;
  const std::string run = dir.file("run");
  {
    RunDirLock first(run);
    try {
      RunDirLock second(run);  // another open file description: flock refuses it like another process
      ADD_FAILURE() << "a second lock was granted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
      EXPECT_NE(std::string(e.what()).find("in use by another training (PID " + std::to_string(getpid())),
                std::string::npos)
          << e.what();
    }
  }
  RunDirLock again(run);  // released by the first's destructor
}

TEST(RunDirLock, AProcessThatDiesHoldingTheLockReleasesIt) {
  test::TempDir dir;
  const std::string run = dir.file("run");
  const pid_t child = fork();
  if (child == 0) {
    RunDirLock held(run);
    _exit(0);  // no destructor runs: the kernel drops the lock with the process
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NO_THROW(RunDirLock mine(run));
}

TEST(RunDir, FreshRefusesAnExistingRunAndOverwriteMovesOnlyItsFiles) {
  test::TempDir dir;
  const std::string run = dir.file("run");
  fs::create_directories(run + "/checkpoints");
  fs::create_directories(run + "/data");
  EXPECT_EQ(prepare_run_dir(run, RunStart::kFresh), "");  // an empty checkpoints folder is no run
  test::write_file(run + "/metrics.jsonl", "{\"step\":1}\n{\"step\":2}\n");
  test::write_file(run + "/config.pbtxt", "model {}\n");
  test::write_file(run + "/data/train.bin", "tokens");
  fs::create_directories(run + "/tb");
  fs::create_directories(run + "/trace");
  test::write_file(run + "/tb/events.out.tfevents.1.host", "");
  test::write_file(run + "/prediction.json", "{}");
  EXPECT_EQ(describe_existing_run(run), "metrics.jsonl (2 steps), config.pbtxt");
  EXPECT_THROW(prepare_run_dir(run, RunStart::kFresh), Error);
  EXPECT_EQ(prepare_run_dir(run, RunStart::kResume), "");
  fs::create_directories(run + ".previous-1");  // taken: the next free number is used
  const std::string aside = prepare_run_dir(run, RunStart::kOverwrite);
  EXPECT_EQ(aside, run + ".previous-2");
  EXPECT_TRUE(fs::exists(aside + "/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(aside + "/checkpoints"));
  EXPECT_FALSE(fs::exists(run + "/metrics.jsonl"));
  // The run's TensorBoard events, traces and prediction go with it (a new run's TensorBoard view
  // must not hold the old run's events).
  for (const char* name : {"tb/events.out.tfevents.1.host", "trace", "prediction.json"}) {
    EXPECT_TRUE(fs::exists(aside + "/" + name)) << name;
    EXPECT_FALSE(fs::exists(run + "/" + name)) << name;
  }
  EXPECT_TRUE(fs::exists(run + "/data/train.bin"));
  EXPECT_EQ(describe_existing_run(run), "");
}

}  // namespace
}  // namespace tt
