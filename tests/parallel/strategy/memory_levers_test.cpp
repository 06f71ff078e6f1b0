// What `train` suggests when a run does not fit: the levers in order, kept as they accumulate, and
// nothing when even the parameters do not fit.
#include <gtest/gtest.h>

#include "parallel/strategy/memory_model.h"

namespace tt::strategy {
namespace {

MemoryInputs tiny_llama_run(const ModelDesc& d) {
  MemoryInputs in;
  in.num_params = model_num_params(d);
  in.desc = &d;
  in.batch = 64;
  in.seq_len = 256;
  return in;
}

TEST(MemoryLevers, PullsRecomputeThenStateThenZero3ThenHalvesTheBatch) {
  const ModelDesc d = llama_desc(4, 8, 2, 256, 1024, 256, 704);
  MemoryInputs in = tiny_llama_run(d);
  const double as_is = rank_memory(in).total();
  EXPECT_EQ(levers_that_fit(in, as_is), "");  // fits: nothing to pull

  MemoryInputs full = in;
  full.recompute = {RecomputeMode::kFull, 0};
  const double with_recompute = rank_memory(full).total();
  ASSERT_LT(with_recompute, as_is);
  EXPECT_EQ(levers_that_fit(in, with_recompute), "--set train.recompute=full");

  // Batch 8 with everything else pulled: the batch halves three times.
  MemoryInputs small = full;
  small.state = StateDType::kInt8;
  small.batch = 8;
  EXPECT_EQ(levers_that_fit(in, rank_memory(small).total()),
            "--set train.recompute=full --set optimizer.state_dtype=int8 --set train.batch_size=8");

  in.ranks = 4;
  MemoryInputs sharded = full;
  sharded.ranks = 4;
  sharded.state = StateDType::kInt8;
  sharded.zero_stage = 3;
  sharded.batch = 1;
  const std::string all = levers_that_fit(in, rank_memory(sharded).total());
  EXPECT_EQ(all,
            "--set train.recompute=full --set optimizer.state_dtype=int8 --set parallel.zero_stage=3 --set "
            "train.batch_size=1");
  EXPECT_EQ(levers_that_fit(in, rank_memory(sharded).total() * 0.5), "");  // nothing fits
}

}  // namespace
}  // namespace tt::strategy
