// How ZeRO cuts the flat parameter buffer across ranks: a pure function of (elements, ranks), so a
// checkpoint written with N ranks can be re-cut for M. Shard boundaries are multiples of 16 elements
// (64 bytes) from the start of what is cut, so ranks sharing a whole buffer (ZeRO-1/2's all-gather
// into the model's parameters) never write the same cache line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
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

// A rank's part of the flat buffer, as units cut by shard_of. The buffer is a sequence of units
// (consecutive ranges covering [0, n)); each unit is cut across the ranks by shard_of, and a rank
// keeps its pieces of all units back to back, in buffer order, in one local buffer.
//
// One unit [0, n) gives ZeRO-1/2's contiguous shard. ZeRO-3 makes every parameter group a unit (as
// FSDP shards each flat parameter): a group's all-gather and its gradients' reduce-scatter then move
// 1/N of it from or to every rank over every link, where with contiguous shards a group inside one
// rank's shard is a broadcast from (a reduce to) that rank, one direction of each link carrying all.
class ShardLayout {
 public:
  struct Piece {
    int64_t begin = 0, end = 0;  // of the flat buffer
    int64_t local = 0;           // where it starts in the local buffer
    int64_t size() const { return end - begin; }
  };
  // One unit [0, n).
  ShardLayout(int64_t n, int world, int rank);
  // units: consecutive, covering [0, n) from 0 without gaps.
  ShardLayout(std::vector<std::pair<int64_t, int64_t>> units, int world, int rank);

  int64_t numel() const { return units_.back().second; }        // n
  int64_t size() const { return size_; }                        // elements held locally
  const std::vector<Piece>& pieces() const { return pieces_; }  // this rank's, one per unit
  const std::vector<std::pair<int64_t, int64_t>>& units() const { return units_; }
  bool contiguous() const { return units_.size() == 1; }
  // The contiguous shard (one unit only).
  Shard range() const;
  // Counts of [begin, end) held by each rank, in rank order; [begin, end) lies inside one unit (or
  // anywhere, with one unit): its parts are then contiguous and in rank order, as reduce_scatter_v
  // and all_gather_v lay them out.
  std::vector<int64_t> split(int64_t begin, int64_t end) const;
  // Local offset of this rank's part of [begin, end) (the same condition; the part may be empty).
  int64_t local_of(int64_t begin, int64_t end) const;

  bool operator==(const ShardLayout& o) const { return units_ == o.units_ && world_ == o.world_ && rank_ == o.rank_; }

 private:
  size_t unit_of(int64_t begin, int64_t end) const;

  std::vector<std::pair<int64_t, int64_t>> units_;
  int world_, rank_;
  std::vector<Piece> pieces_;
  int64_t size_ = 0;
};

}  // namespace tt::parallel
