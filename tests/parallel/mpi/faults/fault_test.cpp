// Failure is an error, never a hang: runs fault_driver under mpirun and checks that a rank killed
// with SIGKILL, a rank that stops reaching a collective, and mismatched collectives each end the job
// with a non-zero exit code and output naming the rank(s) and the collective. Label mpi.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/test_util.h"

namespace tt::test {
namespace {

struct Timed {
  CommandResult r;
  double seconds;
};

Timed run_driver(int np, const std::string& args, const std::string& mpirun_extra = "") {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string cmd = std::string("timeout 90 ") + TT_MPIRUN + " " + mpirun_extra + " -np " + std::to_string(np) +
                          " " + TT_FAULT_DRIVER + " " + args;
  Timed t{run_command(cmd), 0};
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

TEST(MpiFaults, HealthyRunSucceeds) {
  const Timed t = run_driver(2, "--mode none --timeout 10");
  EXPECT_EQ(t.r.exit_code, 0) << t.r.output;
  EXPECT_TRUE(has(t.r.output, "finished")) << t.r.output;
}

// Default mpirun: it notices the dead rank and SIGTERMs the survivors, which say where they were.
TEST(MpiFaults, KilledRankEndsJobNamingRankAndCollective) {
  const Timed t = run_driver(3, "--mode kill --timeout 10 --victim 1 --at 5");
  EXPECT_NE(t.r.exit_code, 0) << t.r.output;
  EXPECT_NE(t.r.exit_code, 124) << "hung:\n" << t.r.output;
  EXPECT_LT(t.seconds, 10 + 20) << t.r.output;
  EXPECT_TRUE(has(t.r.output, "rank 1")) << t.r.output;
  EXPECT_TRUE(has(t.r.output, "all_reduce #5 (step 45, 64.0 MiB f32)")) << t.r.output;
}

// mpirun told not to abort on a failed rank: the survivors' watchdog must end the job itself.
TEST(MpiFaults, KilledRankWithoutMpirunAbortTimesOutNamingRank) {
  const Timed t = run_driver(3, "--mode kill --timeout 3 --victim 1 --at 5", "--mca orte_abort_on_non_zero_status 0");
  EXPECT_NE(t.r.exit_code, 0) << t.r.output;
  EXPECT_NE(t.r.exit_code, 124) << "hung:\n" << t.r.output;
  EXPECT_LT(t.seconds, 3 + 30) << t.r.output;
  EXPECT_TRUE(has(t.r.output,
                  "error: collective all_reduce #5 (step 45, 64.0 MiB f32) timed out after 3.0 s "
                  "waiting for rank(s) 1 (rank 1 not responding"))
      << t.r.output;
}

TEST(MpiFaults, SkippedCollectiveTimesOutNamingRank) {
  const Timed t = run_driver(3, "--mode skip --timeout 3 --victim 2 --at 4");
  EXPECT_NE(t.r.exit_code, 0) << t.r.output;
  EXPECT_NE(t.r.exit_code, 124) << "hung:\n" << t.r.output;
  EXPECT_LT(t.seconds, 3 + 30) << t.r.output;
  EXPECT_TRUE(has(t.r.output,
                  "error: collective all_reduce #4 (step 44, 1.0 MiB f32) timed out after 3.0 s "
                  "waiting for rank(s) 2 (rank 2 last issued #3)"))
      << t.r.output;
}

TEST(MpiFaults, MismatchedCollectivesNameBothRanks) {
  const Timed t = run_driver(2, "--mode mismatch --timeout 10 --victim 1 --at 5");
  EXPECT_EQ(t.r.exit_code, 1) << t.r.output;
  EXPECT_TRUE(has(t.r.output, "rank 0 called all_reduce(1024 f32, avg) #5 but rank 1 called all_gather(512 f32) #5"))
      << t.r.output;
}

}  // namespace
}  // namespace tt::test
