// A rank that stops making progress without dying, in a real 2-rank run: frozen for good (SIGSTOP)
// the job must end within a bound of parallel.timeout_s with an error naming that rank, and the last
// good checkpoint must resume to the reference; slowed (SIGSTOP/SIGCONT cycling, each pause well
// under the timeout) the run must finish with the reference's losses.
//
// Design: SIGSTOP is what a rank looks like when its node swaps hard, its GPU driver hangs or a
// debugger attaches: the MPI connections stay open, so only our collective watchdog can notice.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>

#include "tests/faults/fault_run.h"
#include "tests/process_util.h"

namespace tt::test {
namespace {

class StalledRank : public FaultRunTest {};

TEST_F(StalledRank, FrozenRankEndsTheJobNamingItAndTheLastCheckpointResumes) {
  FaultRunSpec spec;
  spec.steps = 16;
  const std::string reference = run_reference(spec);
  ASSERT_FALSE(HasFailure());

  const std::string run = dir_.file("run");
  FaultRunSpec frozen = spec;
  frozen.timeout_s = 3;
  double seconds_after_stop = 0;
  {
    BackgroundJob job(train_command(run, frozen, false), dir_.file("frozen.log"));
    ASSERT_TRUE(job.started());
    // Past the checkpoint of step 8, in the middle of the run.
    ASSERT_TRUE(job.wait_until([&] { return std::regex_search(job.output(), std::regex("step +10/16 \\|")); }, 60))
        << "exit " << job.early_exit_code() << ":\n"
        << job.output();
    const pid_t rank1 = find_rank_pid(job.pid(), 1);
    ASSERT_GT(rank1, 0);
    ASSERT_EQ(kill(rank1, SIGSTOP), 0);
    const auto t0 = Clock::now();
    const int code = job.wait(60);
    seconds_after_stop = seconds_since(t0);
    const std::string out = job.output();
    kill(rank1, SIGKILL);  // should mpirun have left it behind (the check below then fails)
    ASSERT_NE(code, -1) << "the job still runs 60 s after rank 1 froze:\n" << out;
    EXPECT_NE(code, 0) << out;
    EXPECT_LT(code, 128) << "the job must end by its own error, not by a signal:\n" << out;
    // The watchdog waits timeout_s, then queries the peers (a short window) and aborts.
    EXPECT_GE(seconds_after_stop, frozen.timeout_s - 0.5) << out;
    EXPECT_LT(seconds_after_stop, frozen.timeout_s + 20) << out;
    EXPECT_TRUE(std::regex_search(
        out, std::regex("\\[tt rank 0\\] error: collective \\w+ #\\d+ \\(step \\d+, [^)]*\\) timed out after 3\\.0 s "
                        "waiting for rank\\(s\\) 1 \\(rank 1 not responding")))
        << out;
  }
  const int64_t last_good = newest_checkpoint_step(run);
  EXPECT_GE(last_good, 8);
  EXPECT_LT(last_good, spec.steps);

  auto resumed = run_command("timeout -s KILL 120 " + train_command(run, spec, true));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step " + std::to_string(last_good)), std::string::npos) << resumed.output;
  expect_same_metrics(reference, run, spec.steps);
  expect_same_final_state(reference, run, spec.steps);
}

TEST_F(StalledRank, RankSlowedByStopContCyclesFinishesWithTheReferenceLosses) {
  FaultRunSpec spec;
  spec.steps = 16;
  spec.zero_stage = 2;
  const std::string reference = run_reference(spec);
  ASSERT_FALSE(HasFailure());

  const std::string run = dir_.file("run");
  FaultRunSpec slowed = spec;
  slowed.timeout_s = 10;  // every pause below is far shorter: slow is not dead
  BackgroundJob job(train_command(run, slowed, false), dir_.file("slowed.log"));
  ASSERT_TRUE(job.started());
  ASSERT_TRUE(job.wait_until([&] { return find_rank_pid(job.pid(), 1) > 0; }, 60)) << job.output();
  const pid_t rank1 = find_rank_pid(job.pid(), 1);
  // Rank 1 gets a third of the wall clock, in slices of 300 ms stopped / 150 ms running, until the
  // job ends; it is left running afterwards so that nothing stays stopped.
  std::atomic<bool> done{false};
  int cycles = 0;
  std::thread slower([&] {
    while (!done.load()) {
      kill(rank1, SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      kill(rank1, SIGCONT);
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      ++cycles;
    }
  });
  const int code = job.wait(150);
  done = true;
  slower.join();
  ASSERT_EQ(code, 0) << job.output();
  EXPECT_GE(cycles, 4) << "rank 1 was hardly slowed: the test did not test anything";
  std::printf("[ slowed   ] rank 1 stopped %d times for 300 ms\n", cycles);
  expect_same_metrics(reference, run, spec.steps);
  expect_same_final_state(reference, run, spec.steps);
}

}  // namespace
}  // namespace tt::test
