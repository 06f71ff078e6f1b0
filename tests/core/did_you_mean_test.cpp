// Typo suggestions: near names are offered, distant ones are not, a prefix finds its full name.
#include "core/did_you_mean.h"

#include <gtest/gtest.h>

namespace tt {
namespace {

TEST(DidYouMean, OffersTheNearestPlausibleName) {
  const std::vector<std::string> names = {"gpt2-124m", "gpt2-350m", "llama2-7b", "8x4090-pcie"};
  EXPECT_EQ(closest_name("gpt2-125m", names), "gpt2-124m");
  EXPECT_EQ(closest_name("LLAMA2-7B", names), "llama2-7b");
  EXPECT_EQ(closest_name("8x4090", names), "8x4090-pcie");  // a prefix: the rest was left out
  EXPECT_EQ(closest_name("mistral", names), "");
  EXPECT_EQ(closest_name("ab", {"abcdef"}), "");  // too short to be a prefix worth naming
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace tt
