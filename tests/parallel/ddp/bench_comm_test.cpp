// `topotrain bench comm` under mpirun: the ZeRO calls (reduce_scatter_v, all_gather_v over uneven
// shard sizes) run next to their blocking MPI equivalents, with the nccl-tests bus factor.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/test_util.h"

namespace tt {
namespace {

TEST(BenchComm, UnevenZeroCallsRunWithTheirMpiEquivalents) {
  // 4100 B = 1025 f32 over 3 ranks: shards of 342, 342, 341 elements (uneven on purpose).
  const auto r = test::run_command(std::string(TT_MPIRUN) + " -np 3 " + TT_BINARY +
                                   " bench comm --ops reduce_scatter_v,all_gather_v --sizes 4100 --iters 2 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* op : {"reduce_scatter_v", "all_gather_v"}) {
    // op, size, count 1025, our time, algbw, busbw | the blocking MPI call's time, busbw, ratio
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.output, m,
        std::regex(std::string(op) + R"(\s+4\.0 KiB\s+1025\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+) \|\s+([0-9.]+))")))
        << op << "\n"
        << r.output;
    const double algbw = std::stod(m[2]), busbw = std::stod(m[3]);
    EXPECT_GT(std::stod(m[1]), 0.0) << op;
    EXPECT_GT(std::stod(m[4]), 0.0) << op << ": the blocking MPI column is missing";
    EXPECT_NEAR(busbw, algbw * 2.0 / 3.0, 0.011 + algbw * 0.01) << op << ": bus factor (n-1)/n";
  }
  EXPECT_NE(
      test::run_command(std::string(TT_MPIRUN) + " -np 2 " + TT_BINARY + " bench comm --ops all_gather_w").exit_code,
      0);
}

}  // namespace
}  // namespace tt
