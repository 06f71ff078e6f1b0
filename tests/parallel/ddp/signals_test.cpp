// Signals and dead ranks in a real 2-rank `topotrain train` under mpirun (label mpi): SIGINT to one
// rank stops every rank at the same step with a checkpoint that resumes bit for bit, and SIGKILL of
// one rank ends the job within a bound with output naming the dead rank, whether mpirun or our own
// watchdog notices first.
//
// Design: mpirun runs as a BackgroundJob (tests/process_util.h), which finds rank 1 among its
// descendants and SIGKILLs the whole job if a test bails out early; the trigger to signal is the
// number of records in metrics.jsonl (written unbuffered by rank 0), not wall-clock sleeps.
//
// Observed contract of OpenMPI 4.1 (asserted below; its messages name the launcher as invoked,
// "mpirun" or "mpiexec"):
//  - SIGINT to rank 1: both ranks finish the step, rank 0 writes step_N.ckpt and prints "stopped by
//    signal after step N", both exit 130; mpirun prints "mpirun detected that one or more processes
//    exited with non-zero status" with "Exit code: 130" and itself exits 130. MPI_Finalize fences,
//    so rank 1 cannot exit (and make mpirun kill rank 0) before rank 0 has written the checkpoint.
//  - SIGKILL of rank 1, default mpirun: mpirun prints "mpirun noticed that process rank 1 ... exited
//    on signal 9 (Killed)", SIGTERMs rank 0 (whose handler prints "[tt rank 0] note: terminated
//    while in collective all_reduce #K (step S, ...)"), SIGKILLs it about 2 s later and exits 137
//    (128 + the first failed process's signal).
//  - SIGKILL of rank 1 with --mca orte_abort_on_non_zero_status 0: mpirun leaves rank 0 alone; our
//    watchdog fires after parallel.timeout_s with "timed out after 5.0 s waiting for rank(s) 1" and
//    MPI_Aborts; mpirun still exits 137 (rank 1's signal was the first failure).
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/process_util.h"
#include "tests/test_util.h"

namespace tt::test {
namespace {

namespace fs = std::filesystem;


class DdpSignals : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = run_command(std::string(TT_BINARY) + " data synth --out " + dir_.file("data") +
                         " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 100000 --val-tokens 20000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // `mpirun -np 2 topotrain train` on the synthetic corpus with `steps` steps into run_dir.
  std::string train_command(const std::string& run_dir, int steps, const std::string& mpirun_extra = "",
                            const std::string& extra_sets = "") const {
    return std::string(TT_MPIRUN) + " " + mpirun_extra + " -np 2 " + TT_BINARY + " train --config " + source_dir() +
           "/examples/gpt2-tiny-synth.pbtxt --set data.train=" + dir_.file("data/train.bin") +
           " --set data.val=" + dir_.file("data/val.bin") + " --set logging.run_dir=" + run_dir +
           " --set model.vocab_size=16 --set train.batch_size=8 --set train.threads=1 --set train.log_every=10" +
           " --set train.val_every=0 --set optimizer.warmup_steps=5 --set checkpoint.every=0" +
           " --set train.steps=" + std::to_string(steps) + " " + extra_sets;
  }

  // Starts a long run, waits until rank 0 has logged `after_steps` steps and SIGKILLs rank 1.
  // Returns mpirun's exit code; *output and *seconds_after_kill describe the end.
  int kill_rank1(const std::string& mpirun_extra, std::string* output, double* seconds_after_kill) {
    const std::string run = dir_.file("killed");
    BackgroundJob job(train_command(run, 100000, mpirun_extra, "--set parallel.timeout_s=5"), dir_.file("killed.log"));
    EXPECT_TRUE(job.started());
    const bool ready = job.wait_until([&] { return count_lines(run + "/metrics.jsonl") >= 20; }, 60);
    EXPECT_TRUE(ready) << "run did not reach step 20 (exit " << job.early_exit_code() << "):\n" << job.output();
    if (!ready) return -1;
    const pid_t rank1 = find_rank_pid(job.pid(), 1);
    EXPECT_GT(rank1, 0) << "no descendant of mpirun " << job.pid() << " has OMPI_COMM_WORLD_RANK=1";
    if (rank1 <= 0) return -1;
    EXPECT_EQ(kill(rank1, SIGKILL), 0);
    const auto t0 = Clock::now();
    const int code = job.wait(60);
    *seconds_after_kill = seconds_since(t0);
    *output = job.output();
    return code;
  }

  TempDir dir_;
};

TEST_F(DdpSignals, SigintToOneRankStopsAllRanksAtOneStepAndResumesBitForBit) {
  constexpr int kSteps = 400;
  // Reference: the same run, uninterrupted.
  auto full = run_command("timeout 120 " + train_command(dir_.file("full"), kSteps));
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto uninterrupted = metric_by_step(dir_.file("full/metrics.jsonl"));
  ASSERT_EQ(uninterrupted.size(), size_t(kSteps));

  const std::string run = dir_.file("run");
  int stopped_at = 0;
  {
    BackgroundJob job(train_command(run, kSteps), dir_.file("interrupted.log"));
    ASSERT_TRUE(job.started());
    ASSERT_TRUE(job.wait_until([&] { return count_lines(run + "/metrics.jsonl") >= 50; }, 60))
        << "run did not reach step 50 (exit " << job.early_exit_code() << "):\n"
        << job.output();
    const pid_t rank1 = find_rank_pid(job.pid(), 1);
    ASSERT_GT(rank1, 0) << "no descendant of mpirun " << job.pid() << " has OMPI_COMM_WORLD_RANK=1";
    ASSERT_NE(find_rank_pid(job.pid(), 0), rank1);
    ASSERT_EQ(kill(rank1, SIGINT), 0);
    const int code = job.wait(60);
    const std::string out = job.output();
    ASSERT_NE(code, -1) << "mpirun still running 60 s after SIGINT to rank 1:\n" << out;
    EXPECT_EQ(code, 130) << out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("stopped by signal after step (\\d+); checkpoint written")))
        << out;
    stopped_at = std::stoi(m[1]);
    EXPECT_GE(stopped_at, 50) << out;
    ASSERT_LT(stopped_at, kSteps) << "the run finished before the signal took effect:\n" << out;
    // OpenMPI's report: both ranks exited 130; neither our watchdog nor a kill ended the job.
    EXPECT_TRUE(std::regex_search(out, std::regex("(mpirun|mpiexec) detected that one or more processes exited with "
                                                  "non-zero status")))
        << out;
    EXPECT_TRUE(std::regex_search(out, std::regex("Exit code: +130"))) << out;
    EXPECT_FALSE(has(out, "timed out")) << out;
    EXPECT_FALSE(has(out, "signal 9")) << out;
  }
  // One checkpoint, at the step the run reported; the metrics end there too (rank 0 recorded every
  // step up to the stop and none after it).
  const std::string ckpt_dir = run + "/checkpoints";
  char name[64];
  std::snprintf(name, sizeof name, "step_%08d.ckpt", stopped_at);
  std::vector<std::string> ckpts;
  for (const auto& e : fs::directory_iterator(ckpt_dir)) ckpts.push_back(e.path().filename().string());
  ASSERT_EQ(ckpts, std::vector<std::string>{name}) << "in " << ckpt_dir;
  const auto before = metric_by_step(run + "/metrics.jsonl");
  ASSERT_EQ(before.size(), size_t(stopped_at));
  EXPECT_EQ(before.rbegin()->first, stopped_at);

  auto resumed = run_command("timeout 120 " + train_command(run, kSteps) + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(has(resumed.output, std::string(name) + " at step " + std::to_string(stopped_at))) << resumed.output;
  const auto all = metric_by_step(run + "/metrics.jsonl");
  ASSERT_EQ(all.size(), size_t(kSteps));
  int compared_after_resume = 0;
  for (const auto& [step, loss] : all) {
    EXPECT_EQ(loss, uninterrupted.at(step)) << "step " << step << (step > stopped_at ? " (after resume)" : "");
    compared_after_resume += step > stopped_at;
  }
  EXPECT_EQ(compared_after_resume, kSteps - stopped_at);
}

// Default mpirun: it notices the dead rank, SIGTERMs rank 0 (which says which collective it was
// in), SIGKILLs it and exits 137.
TEST_F(DdpSignals, KilledRankEndsJobQuicklyNamingIt) {
  std::string out;
  double seconds = 0;
  const int code = kill_rank1("", &out, &seconds);
  ASSERT_NE(code, -1) << "mpirun still running 60 s after rank 1 was killed:\n" << out;
  EXPECT_EQ(code, 137) << out;
  EXPECT_LT(seconds, 30) << out;
  EXPECT_TRUE(
      std::regex_search(out, std::regex("(mpirun|mpiexec) noticed that process rank 1 with PID \\d+ on node \\S+ "
                                        "exited on signal 9")))
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\\[tt rank 0\\] note: terminated while in collective \\w+ #\\d+ "
                                                "\\(step \\d+, [^)]*\\), pending for")))
      << out;
}

// mpirun told not to abort on a failed rank: rank 0's watchdog must end the job, naming rank 1.
TEST_F(DdpSignals, KilledRankWithoutMpirunAbortIsNamedByOurWatchdog) {
  std::string out;
  double seconds = 0;
  const int code = kill_rank1("--mca orte_abort_on_non_zero_status 0", &out, &seconds);
  ASSERT_NE(code, -1) << "mpirun still running 60 s after rank 1 was killed:\n" << out;
  EXPECT_EQ(code, 137) << out;
  EXPECT_GE(seconds, 4.0) << "ended before the 5 s timeout: not by our watchdog?\n" << out;
  EXPECT_LT(seconds, 5 + 15) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\\[tt rank 0\\] error: collective \\w+ #\\d+ \\(step \\d+, [^)]*\\) "
                                                "timed out after 5\\.0 s waiting for rank\\(s\\) 1 \\(rank 1 not "
                                                "responding")))
      << out;
  EXPECT_FALSE(has(out, "noticed that process rank 1")) << out;
}

}  // namespace
}  // namespace tt::test
