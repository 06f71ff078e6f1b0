// Gradient buckets: contiguous element ranges of the flat gradient buffer that are reduced by one
// collective each. Assignment is a pure function of the parameter layout and the caps, so every rank
// computes the same buckets without talking to the others.
//
// Design: buckets follow the order in which backward finishes gradients — the end of the buffer first
// (GPT-2 finishes the final LayerNorm and the last block first) — and never split a parameter tensor,
// so a bucket is ready as soon as backward has passed its lowest tensor. The first bucket gets a
// smaller cap so communication starts early (PyTorch DDP does the same with 1 MB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tt::parallel {

struct Bucket {
  int64_t begin = 0, end = 0;  // elements [begin, end) of the gradient buffer
  int64_t size() const { return end - begin; }
};

struct BucketCaps {
  size_t cap_bytes = 25u << 20;       // default 25 MB, as PyTorch DDP
  size_t first_cap_bytes = 1u << 20;  // the first bucket to be reduced
};

// tensor_ranges: [begin, end) of each parameter tensor, in buffer order, covering [0, n) without gaps.
// Returns buckets in reduction order (highest offsets first); together they cover [0, n) exactly. A
// tensor larger than the cap forms a bucket of its own. Throws kInternal on a malformed layout.
std::vector<Bucket> assign_buckets(const std::vector<std::pair<int64_t, int64_t>>& tensor_ranges, size_t elem_bytes,
                                   const BucketCaps& caps);

std::string describe_buckets(const std::vector<Bucket>& buckets,
                             size_t elem_bytes);  // "12 buckets, 1.0 MiB … 24.8 MiB"

}  // namespace tt::parallel
