// DataLoader: shard bookkeeping, the rank-strided global batch stream, the seeded per-epoch
// shard-then-batch shuffle and state save/restore.
// Decision: one rank-independent stream position, mapped to (epoch, batch, shard, offset) on demand,
// so shuffling and resumption are pure functions of plain integers. The shuffle is computed lazily
// (shard order per epoch, then one shard's batch order at a time) so memory stays O(shards +
// batches of one shard) however large the data set is.
#include "data/loader.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/logging.h"
#include "core/rng.h"

namespace tt::data {

namespace {

// splitmix64 finalizer: decorrelates seeds derived from small integers.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Seed of the shuffle stream `salt` (0: shard order, s+1: batches of shard s) of an epoch.
uint64_t shuffle_seed(uint64_t seed, int64_t epoch, uint64_t salt) {
  uint64_t h = mix64(seed ^ 0x6a09e667f3bcc909ull);
  h = mix64(h ^ (static_cast<uint64_t>(epoch) + 0x9e3779b97f4a7c15ull));
  return mix64(h ^ (salt * 0xd1b54a32d192ed03ull + 1));
}

// Uniform integer in [0, n), n >= 1, by rejection (no modulo bias).
uint64_t bounded(Rng& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // multiple of n
  uint64_t x;
  do x = rng.next_u64();
  while (x >= limit);
  return x % n;
}

}  // namespace

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t(0));
  Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[bounded(rng, static_cast<uint64_t>(i) + 1)]);
  return p;
}

DataLoader::DataLoader(const std::vector<std::string>& shard_paths, int64_t batch_size, int64_t seq_len, int rank,
                       int world_size, uint64_t seed, bool shuffle)
    : paths_(shard_paths),
      batch_size_(batch_size),
      seq_len_(seq_len),
      rank_(rank),
      world_size_(world_size),
      seed_(seed),
      shuffle_(shuffle) {
  if (batch_size < 1 || seq_len < 1)
    throw Error(ErrorKind::kConfig, str("batch_size ", batch_size, " and seq_len ", seq_len, " must be >= 1"),
                "data loader", "set positive batch_size and seq_len");
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw Error(ErrorKind::kConfig, str("rank ", rank, " is outside world size ", world_size), "data loader",
                "check the launcher's rank environment");
  if (shard_paths.empty())
    throw Error(ErrorKind::kConfig, "no token shards given", "data loader",
                "point the data path at a shard file, a directory of *.bin shards or a glob pattern");
  const int64_t bt = batch_size * seq_len;
  shards_.reserve(shard_paths.size());
  for (const std::string& path : shard_paths) {
    ShardReader reader(path);
    const int64_t n = reader.num_tokens();
    const int64_t batches = n > 0 ? (n - 1) / bt : 0;
    if (batches < 1)
      throw Error(ErrorKind::kData,
                  str("shard holds ", n, " tokens, fewer than one batch needs (batch_size ", batch_size, " x seq_len ",
                      seq_len, " + 1 = ", bt + 1, ")"),
                  path, "lower batch_size or seq_len, or prepare larger shards");
    first_batch_.push_back(batches_per_epoch_);
    batches_per_epoch_ += batches;
    shards_.push_back(std::move(reader));
  }
  first_batch_.push_back(batches_per_epoch_);  // sentinel: first_batch_[S] = N
  if (world_size_ > batches_per_epoch_ && rank_ == 0)
    log_warn("data: ", batches_per_epoch_, " batches per epoch for ", world_size_,
             " ranks; one round of steps spans several epochs");
}

int64_t DataLoader::shard_batches(int i) const {
  return first_batch_[static_cast<size_t>(i) + 1] - first_batch_[static_cast<size_t>(i)];
}

void DataLoader::prepare_epoch(int64_t epoch) const {
  if (order_epoch_ == epoch) return;
  const std::vector<int64_t> perm = seeded_permutation(num_shards(), shuffle_seed(seed_, epoch, 0));
  shard_order_.assign(perm.begin(), perm.end());
  slot_first_batch_.resize(shard_order_.size() + 1);
  int64_t acc = 0;
  for (size_t k = 0; k < shard_order_.size(); ++k) {
    slot_first_batch_[k] = acc;
    acc += shard_batches(shard_order_[k]);
  }
  slot_first_batch_.back() = acc;
  order_epoch_ = epoch;
}

const std::vector<int64_t>& DataLoader::shard_permutation(int64_t epoch, int shard) const {
  if (perm_epoch_ != epoch || perm_shard_ != shard) {
    batch_perm_ = seeded_permutation(shard_batches(shard), shuffle_seed(seed_, epoch, uint64_t(shard) + 1));
    perm_epoch_ = epoch;
    perm_shard_ = shard;
  }
  return batch_perm_;
}

int64_t DataLoader::batch_order(int64_t epoch, int64_t global_batch) const {
  TT_ASSERT(global_batch >= 0 && global_batch < batches_per_epoch_, "batch ", global_batch, " outside [0, ",
            batches_per_epoch_, ")");
  if (!shuffle_) return global_batch;
  prepare_epoch(epoch);
  auto it = std::upper_bound(slot_first_batch_.begin(), slot_first_batch_.end(), global_batch);
  const size_t slot = static_cast<size_t>(it - slot_first_batch_.begin()) - 1;
  const int shard = shard_order_[slot];
  const int64_t j = global_batch - slot_first_batch_[slot];
  return first_batch_[static_cast<size_t>(shard)] + shard_permutation(epoch, shard)[static_cast<size_t>(j)];
}

BatchInfo DataLoader::locate(int64_t global_batch) const {
  TT_ASSERT(global_batch >= 0 && global_batch < batches_per_epoch_, "batch ", global_batch, " outside [0, ",
            batches_per_epoch_, ")");
  auto it = std::upper_bound(first_batch_.begin(), first_batch_.end(), global_batch);
  const int shard = static_cast<int>(it - first_batch_.begin()) - 1;
  BatchInfo info;
  info.global_batch = global_batch;
  info.read_batch = global_batch;
  info.shard = shard;
  info.token_offset = (global_batch - first_batch_[static_cast<size_t>(shard)]) * tokens_per_batch();
  return info;
}

BatchInfo DataLoader::next(int32_t* inputs, int32_t* targets) {
  const int64_t p = position_ + rank_;
  const int64_t epoch = p / batches_per_epoch_;
  const int64_t g = p % batches_per_epoch_;
  BatchInfo info = locate(batch_order(epoch, g));
  info.epoch = epoch;
  info.global_batch = g;
  const ShardReader& reader = shards_[static_cast<size_t>(info.shard)];
  const int64_t bt = tokens_per_batch();
  reader.copy_tokens(info.token_offset, bt, inputs);
  reader.copy_tokens(info.token_offset + 1, bt, targets);
  position_ += world_size_;
  return info;
}

void DataLoader::set_state(const LoaderState& state) {
  if (state.epoch < 0 || state.batch < 0 || state.batch >= batches_per_epoch_ ||
      state.epoch > (INT64_MAX - state.batch) / batches_per_epoch_ - 1)
    throw Error(ErrorKind::kCheckpoint,
                str("loader state (epoch ", state.epoch, ", batch ", state.batch, ") does not fit ", batches_per_epoch_,
                    " batches per epoch"),
                "data loader",
                "the data set, batch_size or seq_len differ from the checkpointed run; restore those settings");
  position_ = state.epoch * batches_per_epoch_ + state.batch;
}

}  // namespace tt::data
