// Stopping a 2-rank `mpirun topotrain train` the ways people and schedulers do — SIGUSR1 to mpirun
// (forwarded as is), Ctrl-C (SIGINT) and SIGTERM to mpirun (forwarded as SIGCONT, SIGTERM, SIGKILL,
// odls_base_sigkill_timeout seconds apart) — always ends in a consistent stop checkpoint from which
// --resume reproduces the uninterrupted run bit for bit. Label mpi.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "core/checkpoint_io.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace tt::test {
namespace {

namespace fs = std::filesystem;

// Long enough to outlast odls_base_sigkill_timeout (3 s) after the signal at step 30, short enough
// that the reference and each resumed run take seconds: batches of 32 make each step ~30 ms.
constexpr int kSteps = 300;

class LauncherSignals : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    auto r = run_command(std::string(TT_BINARY) + " data synth --out " + dir_->file("data") +
                         " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 100000 --val-tokens 20000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto full = run_command("timeout 300 " + train_command(dir_->file("full")));
    ASSERT_EQ(full.exit_code, 0) << full.output;
    reference_ = new std::map<int, std::string>(metric_by_step(dir_->file("full/metrics.jsonl")));
    ASSERT_EQ(reference_->size(), size_t(kSteps));
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete dir_;
  }

  static std::string train_command(const std::string& run_dir, const std::string& mpirun_extra = "") {
    return std::string(TT_MPIRUN) + " " + mpirun_extra + " -np 2 " + TT_BINARY + " train --config " + source_dir() +
           "/examples/gpt2-tiny-synth.pbtxt --set data.train=" + dir_->file("data/train.bin") +
           " --set data.val=" + dir_->file("data/val.bin") + " --set logging.run_dir=" + run_dir +
           " --set model.vocab_size=16 --set train.batch_size=32 --set train.threads=1 --set train.log_every=100" +
           " --set train.val_every=0 --set optimizer.warmup_steps=5 --set checkpoint.every=0" +
           " --set train.steps=" + std::to_string(kSteps);
  }

  // Starts the run, signals mpirun after step 30, and checks the stop checkpoint and the resume.
  void stop_and_resume(const std::string& name, int sig, const std::string& mpirun_extra) {
    const std::string run = dir_->file(name);
    int stopped_at = 0;
    {
      BackgroundJob job(train_command(run, mpirun_extra), dir_->file(name + ".log"));
      ASSERT_TRUE(job.started());
      ASSERT_TRUE(job.wait_until([&] { return count_lines(run + "/metrics.jsonl") >= 30; }, 60))
          << "run did not reach step 30 (exit " << job.early_exit_code() << "):\n"
          << job.output();
      ASSERT_EQ(kill(job.pid(), sig), 0);
      const int code = job.wait(60);
      ASSERT_NE(code, -1) << "mpirun still running 60 s after signal " << sig << ":\n" << job.output();
      if (sig == SIGUSR1) {  // forwarded without an abort: the ranks' own report comes through
        EXPECT_EQ(code, 130) << job.output();
        EXPECT_TRUE(
            std::regex_search(job.output(), std::regex("stopped by signal after step \\d+; checkpoint written")))
            << job.output();
      }
      const auto checkpoints = list_checkpoints(run + "/checkpoints");
      ASSERT_EQ(checkpoints.size(), 1u) << "no stop checkpoint after signal " << sig << ":\n" << job.output();
      stopped_at = int(checkpoints[0].first);
      EXPECT_GE(stopped_at, 30);
      ASSERT_LT(stopped_at, kSteps) << "the run ended before the signal took effect";
      EXPECT_EQ(metric_by_step(run + "/metrics.jsonl").size(), size_t(stopped_at));
    }
    auto resumed = run_command("timeout 300 " + train_command(run) + " --resume");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    const auto all = metric_by_step(run + "/metrics.jsonl");
    ASSERT_EQ(all.size(), size_t(kSteps));
    for (const auto& [step, loss] : all)
      ASSERT_EQ(loss, reference_->at(step)) << name << ": step " << step << " (stopped at " << stopped_at << ")";
  }

  static TempDir* dir_;
  static std::map<int, std::string>* reference_;
};
TempDir* LauncherSignals::dir_ = nullptr;
std::map<int, std::string>* LauncherSignals::reference_ = nullptr;

// One reference run serves all three ways (ctest runs each test in its own process):
// - SIGUSR1 (what a scheduler should send, e.g. Slurm's --signal=USR1@120): mpirun forwards it to
//   every rank and waits, however long the checkpoint takes;
// - Ctrl-C on mpirun's terminal, which reaches mpirun alone (ORTE puts each rank in its own process
//   group), and SIGTERM to mpirun: with odls_base_sigkill_timeout set, the ranks get SIGTERM that
//   long after the signal and have as long again to stop.
TEST_F(LauncherSignals, EveryWayOfSignallingMpirunEndsInACheckpointThatResumesBitForBit) {
  stop_and_resume("usr1", SIGUSR1, "");
  stop_and_resume("sigint", SIGINT, "--mca odls_base_sigkill_timeout 3");
  stop_and_resume("sigterm", SIGTERM, "--mca odls_base_sigkill_timeout 3");
}

// Without the timeout, the ranks are told how to get a stop checkpoint.
TEST(LauncherSignalsWarning, DefaultMpirunSaysHowToStopWithACheckpoint) {
  TempDir dir;
  auto data = run_command(std::string(TT_BINARY) + " data synth --out " + dir.file("data") +
                          " --vocab 16 --order 2 --seed 3 --train-tokens 20000 --val-tokens 2000");
  ASSERT_EQ(data.exit_code, 0) << data.output;
  auto r = run_command("timeout 120 " + std::string(TT_MPIRUN) + " -np 2 " + TT_BINARY + " train --config " +
                       source_dir() + "/examples/gpt2-tiny-synth.pbtxt --set data.train=" + dir.file("data/train.bin") +
                       " --set data.val= --set logging.run_dir=" + dir.file("warned") +
                       " --set model.vocab_size=16 --set train.steps=2 --set optimizer.warmup_steps=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--mca odls_base_sigkill_timeout 10"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kill -USR1"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tt::test
