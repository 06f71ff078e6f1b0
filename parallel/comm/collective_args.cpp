// Argument checks shared by the backends (see collective_args.h).
#include "parallel/comm/collective_args.h"

#include "core/error.h"

namespace tt::parallel {

namespace {
[[noreturn]] void bad(CollectiveKind kind, const std::string& what) {
  throw Error(ErrorKind::kInternal, what, str("communicator ", collective_name(kind)),
              "this is a bug in the component issuing the collective");
}
}  // namespace

void check_count(CollectiveKind kind, int64_t count) {
  if (count < 0) bad(kind, str("negative element count ", count));
}

void check_reduction(CollectiveKind kind, DType dtype, ReduceOp op) {
  if (!reducible_dtype(dtype))
    bad(kind, str("reduction '", reduce_op_name(op), "' over dtype ", dtype_name(dtype),
                  " is not supported (f32, bf16, f16, i32, u32 are)"));
}

void check_root(int root, int size) {
  if (root < 0 || root >= size) bad(CollectiveKind::kBroadcast, str("root ", root, " is not a rank of ", size));
}

int64_t check_counts(CollectiveKind kind, const std::vector<int64_t>& counts, int size) {
  if (int(counts.size()) != size) bad(kind, str("counts has ", counts.size(), " entries for ", size, " ranks"));
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0) bad(kind, str("counts[", r, "] = ", counts[r], " is negative"));
    total += counts[r];
  }
  return total;
}

}  // namespace tt::parallel
