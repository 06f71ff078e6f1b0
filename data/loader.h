// Distributed batch loader over llm.c token shards (the training spine's data source).
// A batch is one contiguous run of B*T+1 tokens: inputs = x[0 .. BT-1], targets = x[1 .. BT], read
// as B rows of T (llm.c style). Shard s holding n tokens contributes floor((n-1) / (B*T)) batches
// (batch b starts at token b*B*T); an epoch is every batch of every shard.
//
// Design: all ranks walk one global stream of batches, position p = epoch * N + g (N batches per
// epoch, g the global batch index inside the epoch). A round of world_size next() calls (one per
// rank) consumes positions p .. p+world-1 and rank r reads position p + r; in the first epoch that is
// global batches r, r+world, r+2*world, ... So every epoch's N batches are read exactly once and by
// disjoint ranks, every rank takes the same number of steps (no rank runs dry while others wait in
// a collective), and one LoaderState (the position of the next round, identical on all ranks) is
// all a checkpoint needs — a run saved with N ranks resumes with M ranks on the very next batches.
// The map from g to the batch actually read goes through batch_order(epoch, g): with shuffling on,
// a permutation drawn from (seed, epoch) alone — first the shard order, then the batch order inside
// each shard (Fisher-Yates over tt::Rng streams) — so it is identical on every rank, changes every
// epoch, and needs no state beyond the two integers. Shard-then-batch keeps reads local: a rank
// stays inside one mapped shard for long runs of steps instead of hopping across files.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "data/shard.h"

namespace tt::data {

// Position of the next round of batches: global batch `batch` (0 <= batch < batches_per_epoch) of
// epoch `epoch`. The same on every rank; plain integers, stored raw in checkpoints (keep it a
// trivially copyable struct of fixed layout).
struct LoaderState {
  int64_t epoch = 0;
  int64_t batch = 0;
  bool operator==(const LoaderState& o) const { return epoch == o.epoch && batch == o.batch; }
  bool operator!=(const LoaderState& o) const { return !(*this == o); }
};
static_assert(std::is_trivially_copyable_v<LoaderState> && sizeof(LoaderState) == 16,
              "LoaderState is stored raw in checkpoints");

// Where a batch came from (for logs and tests).
struct BatchInfo {
  int64_t epoch = 0;
  int64_t global_batch = 0;  // stream index inside the epoch, before batch_order
  int64_t read_batch = 0;    // batch_order(epoch, global_batch): the batch actually read
  int shard = 0;             // index into shard_paths()
  int64_t token_offset = 0;  // first token of the B*T+1 run inside that shard
};

// Not thread-safe: one thread at a time may call its methods (batch_order caches the current
// epoch's shard permutation). PrefetchLoader wraps it for a background reader.
class DataLoader {
 public:
  // Opens and validates every shard (see ShardReader). Throws tt::Error(kConfig) for B, T < 1, an
  // empty shard list, or rank outside [0, world_size); tt::Error(kData, where=shard) when a shard
  // holds fewer than B*T+1 tokens, naming B and T. With `shuffle`, batches are read in the seeded
  // per-epoch order of batch_order(); without it, in shard order (seed unused).
  DataLoader(const std::vector<std::string>& shard_paths, int64_t batch_size, int64_t seq_len, int rank, int world_size,
             uint64_t seed = 0, bool shuffle = true);

  // Fills inputs[0..B*T) and targets[0..B*T) (row-major B x T) with this rank's next batch and
  // advances by one round. Never runs out: after the last batch of an epoch comes the next epoch.
  // Throws tt::Error(kData) when a uint32 token id does not fit int32.
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
  bool shuffle() const { return shuffle_; }
  const std::vector<std::string>& shard_paths() const { return paths_; }
  const ShardReader& shard(int i) const { return shards_[static_cast<size_t>(i)]; }
  int num_shards() const { return static_cast<int>(shards_.size()); }
  // Batches contributed by shard i.
  int64_t shard_batches(int i) const;

  // Global batch index g of an epoch -> the batch actually read: a permutation of [0, N) for each
  // epoch, a pure function of (seed, epoch, g) when shuffling (identity otherwise). The epoch's
  // shards are visited in a Fisher-Yates order drawn from (seed, epoch); the batches of each shard
  // occupy one contiguous range of g, in a Fisher-Yates order drawn from (seed, epoch, shard).
  int64_t batch_order(int64_t epoch, int64_t global_batch) const;
  // Shard and token offset of (already ordered) global batch g, 0 <= g < batches_per_epoch().
  BatchInfo locate(int64_t global_batch) const;

 private:
  void prepare_epoch(int64_t epoch) const;
  const std::vector<int64_t>& shard_permutation(int64_t epoch, int shard) const;

  std::vector<std::string> paths_;
  std::vector<ShardReader> shards_;
  std::vector<int64_t> first_batch_;  // prefix sums: global index of each shard's first batch
  int64_t batch_size_, seq_len_;
  int rank_, world_size_;
  uint64_t seed_;
  bool shuffle_;
  int64_t batches_per_epoch_ = 0;
  int64_t position_ = 0;  // stream position of the next round: epoch * N + g

  // Shuffle caches (pure functions of seed and epoch, recomputed on demand).
  mutable int64_t order_epoch_ = -1;
  mutable std::vector<int> shard_order_;           // slot k -> shard visited k-th
  mutable std::vector<int64_t> slot_first_batch_;  // slot k -> first g of that shard's range
  mutable int64_t perm_epoch_ = -1;
  mutable int perm_shard_ = -1;
  mutable std::vector<int64_t> batch_perm_;  // within-shard order of (perm_epoch_, perm_shard_)
};

// Fisher-Yates permutation of [0, n) driven by tt::Rng(seed) with unbiased bounded draws; the same
// seed gives the same permutation on every platform.
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

}  // namespace tt::data
