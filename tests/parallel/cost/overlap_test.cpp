// The serial-link overlap simulation and bucket ready times, on hand-made schedules.
#include "parallel/cost/overlap.h"

#include <gtest/gtest.h>

namespace tt::cost {
namespace {

TEST(SerialLink, QueuesJobsAndMeasuresExposure) {
  // Ready at 0, 1, 2, 2 s each: ends 2, 4, 6; backward ends at 3 -> 3 s exposed.
  const LinkSchedule s = simulate_serial_link({{0, 2}, {1, 2}, {2, 2}}, 3.0);
  ASSERT_EQ(s.end_s.size(), 3u);
  EXPECT_DOUBLE_EQ(s.end_s[0], 2);
  EXPECT_DOUBLE_EQ(s.end_s[1], 4);
  EXPECT_DOUBLE_EQ(s.end_s[2], 6);
  EXPECT_DOUBLE_EQ(s.busy_s, 6);
  EXPECT_DOUBLE_EQ(s.exposed_s, 3);
}

TEST(SerialLink, IdleGapsAndFullyHiddenComm) {
  // Link idles until each job is ready; everything ends before backward does.
  const LinkSchedule s = simulate_serial_link({{1, 0.5}, {3, 0.5}}, 5.0);
  EXPECT_DOUBLE_EQ(s.end_s[1], 3.5);
  EXPECT_DOUBLE_EQ(s.exposed_s, 0);
  // A link busy until 4.8 (e.g. ZeRO-3's parameter gather) pushes both past the end.
  const LinkSchedule late = simulate_serial_link({{1, 0.5}, {3, 0.5}}, 5.0, 4.8);
  EXPECT_DOUBLE_EQ(late.finish_s, 5.8);
  EXPECT_NEAR(late.exposed_s, 0.8, 1e-12);
  EXPECT_EQ(simulate_serial_link({}, 5.0).exposed_s, 0.0);
}

TEST(SerialLink, LatencyOverlapsTheNextJobsTransfer) {
  // Three jobs ready at 0, each 1 s on the link then 5 s of latency: transfers run back to back
  // (release the link at 1, 2, 3) and each ends 5 s later, not 6 s after the previous one ends.
  const LinkSchedule s = simulate_serial_link({{0, 1, 5}, {0, 1, 5}, {0, 1, 5}}, 4.0);
  EXPECT_DOUBLE_EQ(s.end_s[0], 6);
  EXPECT_DOUBLE_EQ(s.end_s[2], 8);
  EXPECT_DOUBLE_EQ(s.finish_s, 8);
  EXPECT_DOUBLE_EQ(s.exposed_s, 4);
  EXPECT_DOUBLE_EQ(s.busy_s, 8);  // in flight from 0 to 8, not the 18 s of the jobs' sum
  // In-flight time is a union: [0, 2] and [5, 6] -> 3 s.
  EXPECT_DOUBLE_EQ(simulate_serial_link({{0, 1, 1}, {5, 1, 0}}, 9.0).busy_s, 3);
}

TEST(BucketReadyTimes, LatestTensorInTheBucket) {
  // Tensors [0,10) [10,20) [20,30) ready at 100%, 60%, 20% of a 2 s backward.
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 10}, {10, 20}, {20, 30}};
  const std::vector<double> fraction = {1.0, 0.6, 0.2};
  const std::vector<parallel::Bucket> buckets = {{20, 30}, {0, 20}};
  const auto ready = bucket_ready_times(buckets, ranges, fraction, 2.0);
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_DOUBLE_EQ(ready[0], 0.4);
  EXPECT_DOUBLE_EQ(ready[1], 2.0);
}

}  // namespace
}  // namespace tt::cost
