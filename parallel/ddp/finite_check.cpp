// Finding the first non-finite tensor of a rank's part (see finite_check.h).
#include "parallel/ddp/finite_check.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops/ops.h"

namespace tt::parallel {

int first_non_finite_tensor(const Exec& exec, const ModelLayout& layout, const ShardLayout& shard, const void* part,
                            DType dtype) {
  // A sum of squares is finite exactly when every value is (fp32 squares stay finite in double).
  auto finite = [&](int64_t local, int64_t count) {
    const char* at = static_cast<const char*>(part) + size_t(local) * dtype_size(dtype);
    return std::isfinite(ops::sum_squares(exec, dtype, at, count));
  };
  bool all_finite = true;
  for (const auto& piece : shard.pieces()) all_finite = all_finite && finite(piece.local, piece.size());
  if (all_finite) return -1;
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const ParamInfo& t = layout.tensors[i];
    const int64_t begin = t.offset, end = t.offset + shape_numel(t.shape);
    for (const auto& piece : shard.pieces()) {
      const int64_t b = std::max(begin, piece.begin), e = std::min(end, piece.end);
      if (b < e && !finite(piece.local + b - piece.begin, e - b)) return int(i);
    }
  }
  return -1;  // not reached: some piece was not finite
}

}  // namespace tt::parallel
