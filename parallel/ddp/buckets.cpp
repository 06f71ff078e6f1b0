// Bucket assignment (see buckets.h): walk tensors from the end of the buffer, close a bucket when the
// next tensor would push it over its cap.
#include "parallel/ddp/buckets.h"

#include <algorithm>

#include "core/allocator.h"
#include "core/error.h"

namespace tt::parallel {

std::vector<Bucket> assign_buckets(const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges, size_t elem_bytes,
                                   const BucketCaps& caps) {
  TT_ASSERT(!tensor_ranges.empty() && elem_bytes > 0, "assign_buckets needs tensors");
  for (size_t i = 0; i < tensor_ranges.size(); ++i) {
    TT_ASSERT(tensor_ranges[i].second >= tensor_ranges[i].first, "tensor ", i, " has a negative size");
    TT_ASSERT(i == 0 ? tensor_ranges[i].first == 0 : tensor_ranges[i].first == tensor_ranges[i - 1].second,
              "tensor ranges must be contiguous; tensor ", i, " starts at ", tensor_ranges[i].first);
  }
  std::vector<Bucket> buckets;
  Bucket current{tensor_ranges.back().second, tensor_ranges.back().second};
  for (auto it = tensor_ranges.rbegin(); it != tensor_ranges.rend(); ++it) {
    const size_t cap = buckets.empty() ? caps.first_cap_bytes : caps.cap_bytes;
    const size_t tensor_bytes = size_t(it->second - it->first) * elem_bytes;
    const size_t current_bytes = size_t(current.size()) * elem_bytes;
    if (current.size() > 0 && current_bytes + tensor_bytes > cap) {
      buckets.push_back(current);
      current = Bucket{it->second, it->second};
    }
    current.begin = it->first;
  }
  if (current.size() > 0 || buckets.empty()) buckets.push_back(current);
  return buckets;
}

std::string describe_buckets(const std::vector<Bucket>& buckets, size_t elem_bytes) {
  int64_t lo = buckets.front().size(), hi = lo;
  for (const auto& b : buckets) {
    lo = std::min(lo, b.size());
    hi = std::max(hi, b.size());
  }
  return str(buckets.size(), " buckets, ", format_bytes(double(lo) * elem_bytes), " … ",
             format_bytes(double(hi) * elem_bytes));
}

}  // namespace tt::parallel
