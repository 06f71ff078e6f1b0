// Finding the first non-finite tensor of a rank's part: whole buffers and ZeRO shards, NaN and Inf.
#include "parallel/ddp/finite_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace tt::parallel {
namespace {

TEST(FiniteCheck, NamesTheFirstTensorHoldingANonFiniteValueInThisRanksPart) {
  const ModelDesc d = gpt2_desc(2, 2, 16, 32, 8);
  const ModelLayout layout = model_layout(d);
  const Exec exec{Device::cpu()};
  const ShardLayout whole(group_ranges(layout.groups), 1, 0);
  std::vector<float> values(size_t(layout.numel), 0.5f);
  EXPECT_EQ(first_non_finite_tensor(exec, layout, whole, values.data(), DType::kF32), -1);

  const ParamInfo& later = layout.find("h.1.mlp.c_fc.weight");
  const ParamInfo& earlier = layout.find("h.0.attn.c_proj.weight");
  values[size_t(later.offset + 3)] = std::numeric_limits<float>::quiet_NaN();
  values[size_t(earlier.offset + shape_numel(earlier.shape) - 1)] = std::numeric_limits<float>::infinity();
  const int found = first_non_finite_tensor(exec, layout, whole, values.data(), DType::kF32);
  ASSERT_GE(found, 0);
  EXPECT_EQ(layout.tensors[size_t(found)].name, "h.0.attn.c_proj.weight");

  // Two ranks' ZeRO-3 parts: each sees only what it holds, in its local buffer.
  int seen = 0;
  for (int rank = 0; rank < 2; ++rank) {
    const ShardLayout part(group_ranges(layout.groups), 2, rank);
    std::vector<float> local(size_t(part.size()));
    for (const auto& piece : part.pieces())
      for (int64_t i = 0; i < piece.size(); ++i) local[size_t(piece.local + i)] = values[size_t(piece.begin + i)];
    const int f = first_non_finite_tensor(exec, layout, part, local.data(), DType::kF32);
    if (f >= 0) {
      ++seen;
      const std::string& name = layout.tensors[size_t(f)].name;
      EXPECT_TRUE(name == "h.0.attn.c_proj.weight" || name == "h.1.mlp.c_fc.weight") << name;
    }
  }
  EXPECT_GE(seen, 1);
}

}  // namespace
}  // namespace tt::parallel
