// Times the CPU gradient codec (parallel/ddp/compression) on this rank: compress_with_feedback
// (error feedback on, as GradReducer runs it by default) and decompress_add, in fp32 gradient bytes
// per second, so the cost model prices the codec of CPU ranks by measurement instead of assuming a
// memory-bound pass. probe_topology() runs it on every rank at once (ranks share the cores in
// training too) and keeps the slowest rank's figure.
#pragma once

#include <cstdint>

#include "parallel/ddp/compression.h"
#include "parallel/topology/topology.pb.h"

namespace tt::topology {

// Mean over iters (after one untimed pass) on `elements` gradient-like values; payload bf16 or int8.
CodecMeasurement measure_codec(parallel::GradCompression payload, int64_t elements, int iters);

}  // namespace tt::topology
