// Distributed batch loader over llm.c token shards (the training spine's data source).
// A batch is one contiguous run of B*T+1 tokens: inputs = x[0 .. BT-1], targets = x[1 .. BT], read
// as B rows of T (llm.c style). Shard s holding n tokens contributes floor((n-1) / (B*T)) batches
// (batch b starts at token b*B*T); an epoch is every batch of every shard, in shard order.
//
// Design: all ranks walk one global stream of batches, position p = epoch * N + g (N batches per
// epoch, g the global batch index inside the epoch). A round of world_size next() calls (one per
// rank) consumes positions p .. p+world-1 and rank r reads position p + r; in the first epoch that is
// global batches r, r+world, r+2*world, ... So every epoch's N batches are read exactly once and by
// disjoint ranks, every rank takes the same number of steps (no rank runs dry while others wait in
// a collective), and one LoaderState (the position of the next round, identical on all ranks) is
// all a checkpoint needs. The map from g to (shard, offset) goes through batch_order(epoch, g),
// today the identity; seeded per-epoch shuffling will replace it without touching the state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/shard.h"

namespace tt::data {

// Position of the next round of batches: global batch `batch` (0 <= batch < batches_per_epoch) of
// epoch `epoch`. The same on every rank; plain integers for a checkpoint.
struct LoaderState {
  int64_t epoch = 0;
  int64_t batch = 0;
  bool operator==(const LoaderState& o) const { return epoch == o.epoch && batch == o.batch; }
  bool operator!=(const LoaderState& o) const { return !(*this == o); }
};

// Where a batch came from (for logs and tests).
struct BatchInfo {
  int64_t epoch = 0;
  int64_t global_batch = 0;  // index inside the epoch, before batch_order
  int shard = 0;             // index into shard_paths()
  int64_t token_offset = 0;  // first token of the B*T+1 run inside that shard
};

class DataLoader {
 public:
  // Opens and validates every shard (see ShardReader). Throws tt::Error(kConfig) for B, T < 1, an
  // empty shard list, or rank outside [0, world_size); tt::Error(kData, where=shard) when a shard
  // holds fewer than B*T+1 tokens, naming B and T. `seed` is kept for the coming seeded shuffle.
  DataLoader(const std::vector<std::string>& shard_paths, int64_t batch_size, int64_t seq_len, int rank,
             int world_size, uint64_t seed = 0);

  // Fills inputs[0..B*T) and targets[0..B*T) (row-major B x T) with this rank's next batch and
  // advances by one round. Never runs out: after the last batch of an epoch comes the next epoch.
  BatchInfo next(int32_t* inputs, int32_t* targets);

  void reset() { position_ = 0; }
  LoaderState state() const { return {position_ / batches_per_epoch_, position_ % batches_per_epoch_}; }
  // Continues from a saved state (possibly saved with another world size: the stream position is
  // rank-independent). Throws tt::Error(kCheckpoint) when the state does not fit this data set.
  void set_state(const LoaderState& state);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t batch_size() const { return batch_size_; }
  int64_t seq_len() const { return seq_len_; }
  int64_t tokens_per_batch() const { return batch_size_ * seq_len_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  uint64_t seed() const { return seed_; }
  const std::vector<std::string>& shard_paths() const { return paths_; }
  const ShardReader& shard(int i) const { return shards_[static_cast<size_t>(i)]; }

  // Global batch index g of an epoch -> the batch actually read (identity until shuffling lands).
  int64_t batch_order(int64_t epoch, int64_t global_batch) const;
  // Shard and token offset of (already ordered) global batch g, 0 <= g < batches_per_epoch().
  BatchInfo locate(int64_t global_batch) const;

 private:
  std::vector<std::string> paths_;
  std::vector<ShardReader> shards_;
  std::vector<int64_t> first_batch_;  // prefix sums: global index of each shard's first batch
  int64_t batch_size_, seq_len_;
  int rank_, world_size_;
  uint64_t seed_;
  int64_t batches_per_epoch_ = 0;
  int64_t position_ = 0;  // stream position of the next round: epoch * N + g
};

}  // namespace tt::data
