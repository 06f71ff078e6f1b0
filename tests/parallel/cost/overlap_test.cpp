// The link simulation (ports, per-owner loads, ZeRO-3's gathers) and bucket ready times, on
// hand-made schedules.
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
  // A job holding the link until 4.8 pushes both past the end.
  const LinkSchedule late = simulate_serial_link({{0, 4.8}, {1, 0.5}, {3, 0.5}}, 5.0);
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

TEST(OwnerPortLoad, EqualChunksAreBalancedAndOneOwnerCarriesItAll) {
  // Ports: 2r = rank r receives, 2r + 1 = it sends.
  for (double load : owner_port_load({25, 25, 25, 25})) EXPECT_DOUBLE_EQ(load, 1.0);
  // 4 ranks, the range inside rank 2's shard: a chain 3 → 0 → 1 → 2 carries all 100 elements over
  // every link it uses (4/3 of the ring's 75 per port); rank 3 starts it (receives nothing) and rank 2
  // ends it (sends nothing).
  const auto reduce = owner_port_load({0, 0, 100, 0});
  EXPECT_DOUBLE_EQ(reduce[2 * 2], 4.0 / 3);
  EXPECT_DOUBLE_EQ(reduce[2 * 2 + 1], 0.0);
  EXPECT_DOUBLE_EQ(reduce[2 * 3], 0.0);
  EXPECT_DOUBLE_EQ(reduce[2 * 3 + 1], 4.0 / 3);
  EXPECT_DOUBLE_EQ(reduce[2 * 0 + 1], 4.0 / 3);
  // Two ranks, 3:1: rank 0 receives 1.5x, rank 1 0.5x.
  const auto skew = owner_port_load({75, 25});
  EXPECT_DOUBLE_EQ(skew[0], 1.5);
  EXPECT_DOUBLE_EQ(skew[2], 0.5);
  EXPECT_DOUBLE_EQ(skew[1], 0.5);  // rank 0 sends rank 1's 25
}

TEST(Link, CollectivesWithDifferentOwnersRunSideBySide) {
  // Two ranks: a reduce into rank 1 and one into rank 0 use opposite directions; each takes twice
  // the balanced time (one direction carries everything), and both end at 2. A balanced job then
  // needs every port; a second reduce into rank 1 queues behind the first.
  Link link(4);
  const auto into1 = owner_port_load({0, 100}), into0 = owner_port_load({100, 0});
  EXPECT_DOUBLE_EQ(link.issue({0, 1, 0, into1}), 2);
  EXPECT_DOUBLE_EQ(link.issue({0, 1, 0, into0}), 2);
  EXPECT_DOUBLE_EQ(link.issue({0, 1, 0, {}}), 3);
  EXPECT_DOUBLE_EQ(link.issue({0, 1, 0.5, into1}), 5.5);
  EXPECT_DOUBLE_EQ(link.busy_s(), 5.5);
  EXPECT_DOUBLE_EQ(link.finish_s(), 5.5);
  // A bucket split 90:10 between the owners does not hold up the lighter direction's queue: behind a
  // 10 s reduce into rank 1, its 90% into rank 0 is done at 1.8 and the next reduce into rank 0 at
  // 3.8, while its 10% into rank 1 waits for that direction (20 to 20.2).
  Link busy(4);
  EXPECT_DOUBLE_EQ(busy.issue({0, 10, 0, into1}), 20);
  EXPECT_DOUBLE_EQ(busy.issue({0, 1, 0, owner_port_load({90, 10})}), 20.2);
  EXPECT_DOUBLE_EQ(busy.issue({0, 1, 0, into0}), 3.8);
  // The same jobs on one shared link (no ports) run one after another at the balanced time.
  EXPECT_DOUBLE_EQ(simulate_serial_link({{0, 1}, {0, 1}, {0, 1}, {0, 1, 0.5}}, 0).finish_s, 4.5);
}

// Three groups, each gathered in 1 s on a shared link; 2 s of compute after every acquire. Forward
// acquires 0, 1, 2, backward 2, 1, 0: the two turn-taking windows still hold 2 and 1 when backward
// starts, so backward gathers only group 0.
const std::vector<LinkJob> kGathers = {{0, 1}, {0, 1}, {0, 1}};
const std::vector<std::pair<int, double>> kForward = {{0, 2}, {1, 2}, {2, 2}}, kBackward = {{2, 2}, {1, 2}, {0, 2}};

TEST(Zero3Timeline, PrefetchHidesEveryGatherButTheFirst) {
  // Prefetch: only group 0's first gather waits (1 s); the others arrive during compute.
  const Zero3Timeline on = simulate_zero3_step(kGathers, kForward, kBackward, {}, {});
  EXPECT_DOUBLE_EQ(on.compute_s, 12);
  EXPECT_DOUBLE_EQ(on.wall_s, 13);
  EXPECT_DOUBLE_EQ(on.exposed_s(), 1);
  EXPECT_DOUBLE_EQ(on.busy_s, 4);  // 4 gathers
  // Without prefetch every gather waits: 0, 1 and 2 in forward, 0 again in backward.
  const Zero3Timeline off = simulate_zero3_step(kGathers, kForward, kBackward, {}, {}, 1, 0, false);
  EXPECT_DOUBLE_EQ(off.exposed_s(), 4);
  // A resident group 0 is gathered once: backward finds it still there.
  const Zero3Timeline resident = simulate_zero3_step(kGathers, kForward, kBackward, {0}, {});
  EXPECT_DOUBLE_EQ(resident.busy_s, 3);
  EXPECT_DOUBLE_EQ(resident.exposed_s(), 1);
}

TEST(Zero3Timeline, LaterMicroStepsFindTheWindowsFilled) {
  // Two micro-steps: the second starts with groups 0 and 1 still held (nothing invalidates them
  // before the optimizer step) and its only gathers (2, then 0 again) arrive during compute.
  const Zero3Timeline two = simulate_zero3_step(kGathers, kForward, kBackward, {}, {}, 2);
  EXPECT_DOUBLE_EQ(two.compute_s, 24);
  EXPECT_DOUBLE_EQ(two.exposed_s(), 1);  // not twice the cold micro-step's 1 s
  EXPECT_DOUBLE_EQ(two.busy_s, 6);
}

TEST(Zero3Timeline, GradientReductionsDelayTheNextGather) {
  // A 3 s reduce-scatter ready 1 s into backward (wall 7 + 1 = 8) holds the shared link until 11;
  // group 0's prefetch, issued at 9, runs 11-12, and the acquire at 11 waits 1 s. Compute ends at
  // 14; the link is done at 12.
  const Zero3Timeline tl = simulate_zero3_step(kGathers, kForward, kBackward, {}, {{1, 3}});
  EXPECT_DOUBLE_EQ(tl.wall_s, 14);
  EXPECT_DOUBLE_EQ(tl.exposed_s(), 2);
  // A reduce-scatter ready after backward's last compute ends the micro-step: issued at 13, ends 16.
  EXPECT_DOUBLE_EQ(simulate_zero3_step(kGathers, kForward, kBackward, {}, {{7, 3}}).wall_s, 16);
  // With two micro-steps the second waits for the first's reduction (finish_backward): its forward
  // starts at 16, its own reduction runs 28-31.
  const Zero3Timeline two = simulate_zero3_step(kGathers, kForward, kBackward, {}, {{7, 3}}, 2);
  EXPECT_DOUBLE_EQ(two.wall_s, 31);
  EXPECT_DOUBLE_EQ(two.exposed_s(), 7);
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
