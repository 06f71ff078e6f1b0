// TensorBoard event files of real `topotrain train` runs, read back with TensorBoard's own readers
// (tests/core/tensorboard_check.py; skipped with a message when `import tensorboard` fails, see
// tests/run.sh): every metrics.jsonl value and the config text, then a run resumed from an earlier
// checkpoint whose repeated steps TensorBoard shows once. Also: logging.tensorboard: false writes
// nothing, and an event file that cannot be created costs the run nothing but a warning.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "tests/launch/tiny_corpus.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using test::config_path;
using test::make_corpus;
using test::run_command;
using test::run_topotrain;
using test::TempDir;

using test::has;

// "" when TensorBoard's Python package imports, else why not.
std::string tensorboard_missing() {
  const auto r = run_command("python3 -c 'import tensorboard' 2>&1");
  return r.exit_code == 0 ? "" : "python3 cannot import tensorboard (pip install tensorboard): " + r.output;
}

test::CommandResult check_with_tensorboard(const std::string& run_dir, const std::string& flags = "") {
  return run_command("python3 " + test::source_dir() + "/tests/core/tensorboard_check.py " + run_dir + " " + flags +
                     " 2>&1");
}

TEST(TensorBoardReader, ReadsEveryMetricsValueAndTheConfigAndAResumeShowsEachStepOnce) {
  const std::string missing = tensorboard_missing();
  if (!missing.empty()) GTEST_SKIP() << "not reading event files with TensorBoard's reader: " << missing;
  TempDir dir;
  const std::string sets =
      make_corpus(dir, 100000) +
      " --set train.steps=6 --set train.val_every=2 --set checkpoint.every=4 --set checkpoint.keep=2";
  const auto first = run_topotrain("train --config " + config_path() + sets);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto check = check_with_tensorboard(dir.file("run"));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_TRUE(has(check.output, "all checks passed")) << check.output;
  std::cout << check.output;

  // Resume from step 4 (drop the step-6 checkpoint): steps 5 and 6 are trained and logged again.
  fs::remove(dir.file("run/checkpoints/step_00000006.ckpt"));
  const auto resumed = run_topotrain("train --config " + config_path() + sets + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  ASSERT_TRUE(has(resumed.output, "at step 4")) << resumed.output;
  const auto again = check_with_tensorboard(dir.file("run"), "--expect-files 2 --expect-repeated-steps");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(has(again.output, "all checks passed")) << again.output;
  std::cout << again.output;
}

TEST(TensorBoardReader, OffWritesNoEventFiles) {
  TempDir dir;
  const auto r = run_topotrain("train --config " + config_path() + make_corpus(dir, 100000) +
                               " --set train.steps=2 --set logging.tensorboard=false");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("run/tb")));
  EXPECT_EQ(test::metric_by_step(dir.file("run/metrics.jsonl")).size(), 2u);
}

TEST(TensorBoardReader, AnEventFileThatCannotBeCreatedCostsOnlyAWarning) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=3";
  fs::create_directories(dir.file("run"));
  test::write_file(dir.file("run/tb"), "not a directory");
  const auto r = run_topotrain("train --config " + config_path() + sets);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "TensorBoard event file " + dir.file("run/tb/events.out.tfevents."))) << r.output;
  EXPECT_TRUE(has(r.output, "cannot create the directory " + dir.file("run/tb"))) << r.output;
  EXPECT_EQ(test::metric_by_step(dir.file("run/metrics.jsonl")).size(), 3u);
  EXPECT_TRUE(fs::exists(dir.file("run/checkpoints/step_00000003.ckpt")));
}

}  // namespace
}  // namespace tt
