// Gathers of a flat fp32 buffer that the ranks hold sharded (ZeRO, a ShardLayout): a range of it onto
// every rank (ZeRO-3's parameter groups, whole-buffer copies), and the whole of it onto rank 0 in
// chunks (checkpoints), so that the other ranks never hold more than one chunk of it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "parallel/comm/communicator.h"
#include "parallel/ddp/sharding.h"

namespace tt::parallel {

// Starts the all-gather of [begin, end) (inside one of the layout's units) into out[end - begin] on
// every rank; mine is this rank's local buffer (layout.size() elements). Collective; ranks holding
// none of the range take part with nothing to send.
std::shared_ptr<Work> all_gather_range(Communicator& comm, const ShardLayout& layout, const float* mine, int64_t begin,
                                       int64_t end, float* out);

// The whole buffer into full[layout.numel()] on rank 0 (full is ignored elsewhere and may be null),
// in chunks of at most chunk_elems; other ranks use a chunk-sized scratch buffer. Collective; returns
// when done.
void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const float* mine, float* full,
                     int64_t chunk_elems = 1 << 22);
// The same, handing rank 0 each chunk in buffer order (chunk, its element count) instead of a whole
// buffer: no rank holds more than one chunk (checkpoints stream it into the file).
using ChunkSink = std::function<void(const float* chunk, int64_t count)>;
void gather_to_rank0(Communicator& comm, const ShardLayout& layout, const float* mine, const ChunkSink& sink,
                     int64_t chunk_elems = 1 << 22);

}  // namespace tt::parallel
