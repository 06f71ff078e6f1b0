// ZeRO-3's gather window policy (shared by ShardedParams and the cost model's simulation): resident
// groups keep their own slot; the others take turns in two slots, least recently used first,
// never evicting the group being kept.
#include "parallel/ddp/window_slots.h"

#include <gtest/gtest.h>

namespace tt::parallel {
namespace {

TEST(WindowSlots, ResidentGroupsKeepTheirSlotAndTheOthersTakeTurns) {
  WindowSlots slots({0});
  ASSERT_EQ(slots.size(), 3);
  EXPECT_EQ(slots.resident_group(0), 0);
  EXPECT_EQ(slots.resident_group(1), -1);
  EXPECT_EQ(slots.slot_for(0, 5), 0);  // a resident group goes to its own slot
  slots.fill(0, 0);
  const int a = slots.slot_for(1, -1);
  slots.fill(a, 1);
  slots.touch(a);
  const int b = slots.slot_for(2, 1);  // keeps group 1: the other turn-taking slot
  EXPECT_NE(b, a);
  EXPECT_GT(b, 0);
  slots.fill(b, 2);
  slots.touch(b);
  EXPECT_EQ(slots.holding(1), a);
  EXPECT_EQ(slots.holding(2), b);
  EXPECT_EQ(slots.slot_for(3, -1), a);  // least recently used
  EXPECT_EQ(slots.slot_for(3, 1), b);   // ... unless it holds the group being kept
  slots.touch(a);
  EXPECT_EQ(slots.slot_for(3, -1), b);
  EXPECT_EQ(slots.holding(0), 0);
  slots.clear();
  EXPECT_EQ(slots.holding(0), -1);
  EXPECT_EQ(slots.holding(1), -1);
}

}  // namespace
}  // namespace tt::parallel
