// Argument checks shared by every backend: counts, roots, dtypes and the _v count vectors.
// Violations are bugs in the calling component, reported as tt::Error(kInternal) naming the
// collective and the bad argument.
#pragma once

#include <vector>

#include "parallel/comm/communicator.h"

namespace tt::parallel {

void check_count(CollectiveKind kind, int64_t count);
void check_reduction(CollectiveKind kind, DType dtype, ReduceOp op);
void check_root(int root, int size);
// counts.size() == size, every entry >= 0; returns the sum.
int64_t check_counts(CollectiveKind kind, const std::vector<int64_t>& counts, int size);

}  // namespace tt::parallel
