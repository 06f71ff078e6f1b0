// Range and chunked gathers of a sharded buffer (see shard_gather.h).
#include "parallel/ddp/shard_gather.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "parallel/ddp/sharding.h"

namespace tt::parallel {

std::shared_ptr<Work> all_gather_range(Communicator& comm, const float* mine, int64_t n, int64_t begin, int64_t end,
                                       float* out) {
  TT_ASSERT(0 <= begin && begin <= end && end <= n, "range [", begin, ", ", end, ") of ", n);
  const Shard shard = shard_of(n, comm.size(), comm.rank());
  // This rank's part of the range starts at max(begin, shard.begin), clamped into the shard (it may be empty).
  const int64_t from = std::clamp(begin, shard.begin, shard.end);
  return comm.all_gather_v(mine + (from - shard.begin), out, split_by_shards(begin, end, n, comm.size()), DType::kF32);
}

void gather_to_rank0(Communicator& comm, const float* mine, int64_t n, const ChunkSink& sink, int64_t chunk_elems) {
  TT_ASSERT(chunk_elems > 0, "chunk_elems ", chunk_elems);
  std::vector<float> chunk(size_t(std::min(n, chunk_elems)));
  for (int64_t c = 0; c < n; c += chunk_elems) {
    const int64_t end = std::min(n, c + chunk_elems);
    all_gather_range(comm, mine, n, c, end, chunk.data())->wait();
    if (comm.rank() == 0) sink(chunk.data(), end - c);
  }
}

void gather_to_rank0(Communicator& comm, const float* mine, int64_t n, float* full, int64_t chunk_elems) {
  int64_t at = 0;
  gather_to_rank0(
      comm, mine, n,
      [&](const float* chunk, int64_t count) {
        std::memcpy(full + at, chunk, size_t(count) * sizeof(float));
        at += count;
      },
      chunk_elems);
}

}  // namespace tt::parallel
