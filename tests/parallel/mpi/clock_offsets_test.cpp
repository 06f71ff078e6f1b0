// Clock offsets under mpirun (one host): ranks that share rank 0's clock get offset 0 without an
// exchange; measured anyway, each offset is within its own error bound (half its round trip) of the
// true offset, which on one host is 0; and every rank makes the same collective calls.
#include "parallel/comm/trace/clock_offsets.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/parallel/mpi/mpi_test_env.h"

namespace tt::parallel {
namespace {

using test::mpi_comm;

TEST(ClockOffsets, SharedClockIsZeroAndMeasuredOffsetsAreWithinHalfTheirRoundTrip) {
  Communicator& c = mpi_comm();
  EXPECT_NE(clock_identity(), 0) << "this Linux has /proc/sys/kernel/random/boot_id";
  EXPECT_EQ(clock_identity(), clock_identity());
  const std::vector<ClockOffset> shared = measure_clock_offsets(c, 8);
  ASSERT_EQ(shared.size(), size_t(c.size()));
  if (c.rank() == 0)
    for (int r = 1; r < c.size(); ++r) {
      EXPECT_TRUE(shared[size_t(r)].shared_clock) << "rank " << r;
      EXPECT_EQ(shared[size_t(r)].offset_ns, 0) << "rank " << r;
    }
  const std::vector<ClockOffset> measured = measure_clock_offsets(c, 16, /*measure_shared=*/true);
  if (c.rank() == 0)
    for (int r = 1; r < c.size(); ++r) {
      const ClockOffset& o = measured[size_t(r)];
      EXPECT_FALSE(o.shared_clock);
      EXPECT_GT(o.rtt_ns, 0) << "rank " << r;
      // The true offset is 0; the estimate's error is at most half the round trip (+1 us of
      // timestamp granularity and the halving's rounding).
      EXPECT_LE(std::llabs(o.offset_ns), o.rtt_ns / 2 + 1000) << "rank " << r << " rtt " << o.rtt_ns;
    }
}

}  // namespace
}  // namespace tt::parallel
