// DataLoader: shard bookkeeping, the rank-strided global batch stream and state save/restore.
// Decision: one rank-independent stream position, mapped to (epoch, batch, shard, offset) on demand,
// so shuffling and resumption are pure functions of plain integers.
#include "data/loader.h"

#include <algorithm>

#include "core/error.h"
#include "core/logging.h"

namespace tt::data {

DataLoader::DataLoader(const std::vector<std::string>& shard_paths, int64_t batch_size, int64_t seq_len, int rank,
                       int world_size, uint64_t seed)
    : paths_(shard_paths), batch_size_(batch_size), seq_len_(seq_len), rank_(rank), world_size_(world_size),
      seed_(seed) {
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
                  str("shard holds ", n, " tokens, fewer than one batch needs (batch_size ", batch_size,
                      " x seq_len ", seq_len, " + 1 = ", bt + 1, ")"),
                  path, "lower batch_size or seq_len, or prepare larger shards");
    first_batch_.push_back(batches_per_epoch_);
    batches_per_epoch_ += batches;
    shards_.push_back(std::move(reader));
  }
  if (world_size_ > batches_per_epoch_ && rank_ == 0)
    log_warn("data: ", batches_per_epoch_, " batches per epoch for ", world_size_,
             " ranks; one round of steps spans several epochs");
}

int64_t DataLoader::batch_order(int64_t epoch, int64_t global_batch) const {
  (void)epoch;  // seeded per-epoch shuffling goes here
  return global_batch;
}

BatchInfo DataLoader::locate(int64_t global_batch) const {
  TT_ASSERT(global_batch >= 0 && global_batch < batches_per_epoch_, "batch ", global_batch, " outside [0, ",
            batches_per_epoch_, ")");
  auto it = std::upper_bound(first_batch_.begin(), first_batch_.end(), global_batch);
  const int shard = static_cast<int>(it - first_batch_.begin()) - 1;
  BatchInfo info;
  info.global_batch = global_batch;
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
  if (state.epoch < 0 || state.batch < 0 || state.batch >= batches_per_epoch_)
    throw Error(ErrorKind::kCheckpoint,
                str("loader state (epoch ", state.epoch, ", batch ", state.batch, ") does not fit ",
                    batches_per_epoch_, " batches per epoch"),
                "data loader",
                "the data set, batch_size or seq_len differ from the checkpointed run; restore those settings");
  position_ = state.epoch * batches_per_epoch_ + state.batch;
}

}  // namespace tt::data
