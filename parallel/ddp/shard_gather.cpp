// Range and chunked gathers of a sharded buffer (see shard_gather.h).
#include "parallel/ddp/shard_gather.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace tt::parallel {

std::shared_ptr<Work> all_gather_range(Communicator& comm, const ShardLayout& layout, const void* mine, DType dtype,
                                       int64_t begin, int64_t end, void* out) {
  const auto* local = static_cast<const char*>(mine) + layout.local_of(begin, end) * int64_t(dtype_size(dtype));
  return comm.all_gather_v(local, out, layout.split(begin, end), dtype);
}

void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const void* mine, DType dtype, const Exec& exec,
                     const ChunkSink& sink, int64_t chunk_elems) {
  const size_t es = dtype_size(dtype);
  const LocalReader read = [&](int64_t local, int64_t) { return static_cast<const char*>(mine) + local * int64_t(es); };
  gather_to_rank0(comm, layout, read, dtype, exec, sink, chunk_elems);
}

void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const LocalReader& read, DType dtype,
                     const Exec& exec, const ChunkSink& sink, int64_t chunk_elems) {
  TT_ASSERT(chunk_elems > 0, "chunk_elems ", chunk_elems);
  const int64_t len = std::min(layout.numel(), chunk_elems);
  const size_t es = dtype_size(dtype);
  const Tensor chunk = Tensor::zeros("gather.chunk", {std::max<int64_t>(len, 1)}, dtype, exec.device);
  std::vector<char> host(exec.is_cuda() && comm.rank() == 0 ? size_t(len) * es : 0);
  for (const auto& [unit_begin, unit_end] : layout.units())
    for (int64_t c = unit_begin; c < unit_end; c += chunk_elems) {
      const int64_t end = std::min(unit_end, c + chunk_elems);
      const std::vector<int64_t> counts = layout.split(c, end);
      const void* my_part = read(layout.local_of(c, end), counts[size_t(comm.rank())]);
      comm.all_gather_v(my_part, chunk.raw(), counts, dtype)->wait();
      if (comm.rank() != 0) continue;
      if (!exec.is_cuda()) {
        sink(chunk.raw(), end - c);
        continue;
      }
      copy_sync(exec, host.data(), chunk.raw(), size_t(end - c) * es);
      sink(host.data(), end - c);
    }
}

void stream_to_host(const Exec& exec, const void* data, DType dtype, int64_t n, const ChunkSink& sink,
                    int64_t chunk_elems) {
  const size_t es = dtype_size(dtype);
  if (!exec.is_cuda()) {
    sink(data, n);
    return;
  }
  std::vector<char> host(size_t(std::min(n, chunk_elems)) * es);
  for (int64_t c = 0; c < n; c += chunk_elems) {
    const int64_t count = std::min(n - c, chunk_elems);
    copy_sync(exec, host.data(), static_cast<const char*>(data) + c * int64_t(es), size_t(count) * es);
    sink(host.data(), count);
  }
}

}  // namespace tt::parallel
