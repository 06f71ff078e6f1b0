// Tests for core/format.h.
#include "core/format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tt {
namespace {

TEST(FormatTest, Duration) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(59.6), "1m00s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(NAN), "?");
  EXPECT_EQ(format_duration(INFINITY), "?");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(FormatTest, Count) {
  EXPECT_EQ(format_count(9876), "9876");
  EXPECT_EQ(format_count(78900), "78.9k");
  EXPECT_EQ(format_count(4.56e6), "4.56M");
  EXPECT_EQ(format_count(1.234e9), "1.23B");
}

}  // namespace
}  // namespace tt
