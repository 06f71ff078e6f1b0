// Shard arithmetic (see sharding.h).
#include "parallel/ddp/sharding.h"

#include <algorithm>

#include "core/error.h"

namespace tt::parallel {

namespace {
constexpr int64_t kAlign = 16;
}

Shard shard_of(int64_t n, int world, int rank) {
  TT_ASSERT(world >= 1 && rank >= 0 && rank < world && n >= 0, "shard_of(", n, ", ", world, ", ", rank, ")");
  const int64_t per = ((n + world - 1) / world + kAlign - 1) / kAlign * kAlign;
  const int64_t begin = std::min(n, per * rank);
  return {begin, std::min(n, begin + per)};
}

std::vector<int64_t> shard_sizes(int64_t n, int world) {
  std::vector<int64_t> sizes;
  for (int r = 0; r < world; ++r) sizes.push_back(shard_of(n, world, r).size());
  return sizes;
}

std::vector<int64_t> split_by_shards(int64_t begin, int64_t end, int64_t n, int world) {
  std::vector<int64_t> counts;
  for (int r = 0; r < world; ++r) {
    const Shard s = shard_of(n, world, r);
    counts.push_back(std::max<int64_t>(0, std::min(end, s.end) - std::max(begin, s.begin)));
  }
  return counts;
}

}  // namespace tt::parallel
