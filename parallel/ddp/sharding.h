// How the flat parameter buffer is cut into one contiguous shard per rank for ZeRO: a pure function
// of (elements, ranks), so a checkpoint written with N ranks can be re-cut for M. Shard boundaries are
// multiples of 16 elements (64 bytes) so no two ranks write the same cache line.
#pragma once

#include <cstdint>
#include <vector>

namespace tt::parallel {

struct Shard {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

// Shard of `rank` among `world` ranks over n elements; shards are in rank order and cover [0, n).
Shard shard_of(int64_t n, int world, int rank);
// Element counts of every rank's shard (for reduce_scatter_v / all_gather_v).
std::vector<int64_t> shard_sizes(int64_t n, int world);
// Counts of [begin, end) falling into each rank's shard, in rank order (they sum to end - begin).
std::vector<int64_t> split_by_shards(int64_t begin, int64_t end, int64_t n, int world);

}  // namespace tt::parallel
