// Which tensor of a rank's part of a flat buffer (parameters or gradients) holds a value that is
// not finite: what a diverging run reports, and what keeps non-finite weights out of checkpoints.
#pragma once

#include "core/exec.h"
#include "core/model/param_layout.h"
#include "parallel/ddp/sharding.h"

namespace tt::parallel {

// The index in layout.tensors of the first tensor, in buffer order, whose values in `part` (this
// rank's part of the flat buffer, laid out as `shard` says, on exec's device) are not all finite;
// -1 when every value is. One pass over the part; the per-tensor search runs only when it fails.
int first_non_finite_tensor(const Exec& exec, const ModelLayout& layout, const ShardLayout& shard, const void* part,
                            DType dtype);

}  // namespace tt::parallel
