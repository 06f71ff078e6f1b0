// Range and chunked gathers of a sharded buffer (see shard_gather.h).
#include "parallel/ddp/shard_gather.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace tt::parallel {

std::shared_ptr<Work> all_gather_range(Communicator& comm, const ShardLayout& layout, const float* mine, int64_t begin,
                                       int64_t end, float* out) {
  return comm.all_gather_v(mine + layout.local_of(begin, end), out, layout.split(begin, end), DType::kF32);
}

void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const float* mine, const ChunkSink& sink,
                     int64_t chunk_elems) {
  TT_ASSERT(chunk_elems > 0, "chunk_elems ", chunk_elems);
  std::vector<float> chunk(size_t(std::min(layout.numel(), chunk_elems)));
  for (const auto& [unit_begin, unit_end] : layout.units())
    for (int64_t c = unit_begin; c < unit_end; c += chunk_elems) {
      const int64_t end = std::min(unit_end, c + chunk_elems);
      all_gather_range(comm, layout, mine, c, end, chunk.data())->wait();
      if (comm.rank() == 0) sink(chunk.data(), end - c);
    }
}

void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const float* mine, float* full,
                     int64_t chunk_elems) {
  int64_t at = 0;
  gather_to_rank0(
      comm, layout, mine,
      [&](const float* chunk, int64_t count) {
        std::memcpy(full + at, chunk, size_t(count) * sizeof(float));
        at += count;
      },
      chunk_elems);
}

}  // namespace tt::parallel
