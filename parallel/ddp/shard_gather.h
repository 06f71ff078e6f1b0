// Gathers of a flat buffer that the ranks hold sharded (ZeRO, a ShardLayout): a range of it onto
// every rank (ZeRO-3's parameter groups), and the whole of it onto rank 0 in chunks (checkpoints,
// the host copy for sampling), so that no rank ever holds more than one chunk of it beyond its shard.
// Buffers are memory of the communicator's device (host for MPI, the GPU for NCCL).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "core/exec.h"
#include "parallel/comm/communicator.h"
#include "parallel/ddp/sharding.h"

namespace tt::parallel {

// Starts the all-gather of [begin, end) (inside one of the layout's units) into out[end - begin] on
// every rank; mine is this rank's local buffer (layout.size() elements of dtype). Collective; ranks
// holding none of the range take part with nothing to send.
std::shared_ptr<Work> all_gather_range(Communicator& comm, const ShardLayout& layout, const void* mine, DType dtype,
                                       int64_t begin, int64_t end, void* out);

// The whole buffer onto rank 0, handed to `sink` chunk by chunk in buffer order as host memory
// (chunk, its element count); other ranks only send. Chunks of at most chunk_elems live in a scratch
// buffer on exec.device (staged to the host on CUDA). Collective; returns when done.
using ChunkSink = std::function<void(const void* chunk, int64_t count)>;
void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const void* mine, DType dtype, const Exec& exec,
                     const ChunkSink& sink, int64_t chunk_elems = 1 << 22);

// The same with this rank's part read on demand: read(local, count) returns memory of exec.device
// holding elements [local, local + count) of the local buffer as dtype, valid until the next call
// (count <= chunk_elems), for state kept in another form (the optimizer's quantised moments).
using LocalReader = std::function<const void*(int64_t local, int64_t count)>;
void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const LocalReader& read, DType dtype,
                     const Exec& exec, const ChunkSink& sink, int64_t chunk_elems = 1 << 22);

// The whole buffer `data` (n elements of dtype, memory of exec.device) handed to `sink` chunk by
// chunk as host memory: the unsharded counterpart of gather_to_rank0, for one rank.
void stream_to_host(const Exec& exec, const void* data, DType dtype, int64_t n, const ChunkSink& sink,
                    int64_t chunk_elems = 1 << 22);

}  // namespace tt::parallel
