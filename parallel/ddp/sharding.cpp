// Shard arithmetic (see sharding.h).
#include "parallel/ddp/sharding.h"

#include <algorithm>

#include "core/error.h"

namespace tt::parallel {

namespace {
constexpr int64_t kAlign = 16;
}

Shard shard_of(int64_t n, int world, int rank) {
  TT_ASSERT(world >= 1 && rank >= 0 && rank < world && n >= 0, "shard_of(", n, ", ", world, ", ", rank, ")");
  const int64_t per = ((n + world - 1) / world + kAlign - 1) / kAlign * kAlign;
  const int64_t begin = std::min(n, per * rank);
  return {begin, std::min(n, begin + per)};
}

std::vector<int64_t> shard_sizes(int64_t n, int world) {
  std::vector<int64_t> sizes;
  for (int r = 0; r < world; ++r) sizes.push_back(shard_of(n, world, r).size());
  return sizes;
}

std::vector<int64_t> split_by_shards(int64_t begin, int64_t end, int64_t n, int world) {
  std::vector<int64_t> counts;
  for (int r = 0; r < world; ++r) {
    const Shard s = shard_of(n, world, r);
    counts.push_back(std::max<int64_t>(0, std::min(end, s.end) - std::max(begin, s.begin)));
  }
  return counts;
}

ShardLayout::ShardLayout(int64_t n, int world, int rank) : ShardLayout({{0, n}}, world, rank) {}

ShardLayout::ShardLayout(std::vector<std::pair<int64_t, int64_t>> units, int world, int rank)
    : units_(std::move(units)), world_(world), rank_(rank) {
  TT_ASSERT(!units_.empty() && units_.front().first == 0, "shard units must start at 0");
  for (size_t u = 0; u < units_.size(); ++u) {
    const auto [begin, end] = units_[u];
    TT_ASSERT(end >= begin && (u == 0 || begin == units_[u - 1].second), "shard unit ", u, " [", begin, ", ", end,
              ") does not follow the one before");
    const Shard s = shard_of(end - begin, world, rank);
    pieces_.push_back({begin + s.begin, begin + s.end, size_});
    size_ += s.size();
  }
}

Shard ShardLayout::range() const {
  TT_ASSERT(contiguous(), "a shard of ", units_.size(), " units is not one range");
  return {pieces_[0].begin, pieces_[0].end};
}

size_t ShardLayout::unit_of(int64_t begin, int64_t end) const {
  TT_ASSERT(0 <= begin && begin <= end && end <= numel(), "range [", begin, ", ", end, ") of ", numel());
  // The last unit starting at or before `begin`.
  const auto it = std::upper_bound(units_.begin(), units_.end(), begin,
                                   [](int64_t at, const std::pair<int64_t, int64_t>& u) { return at < u.first; });
  const size_t u = size_t(it - units_.begin()) - 1;
  TT_ASSERT(end <= units_[u].second || contiguous(), "range [", begin, ", ", end, ") crosses shard unit ", u, " [",
            units_[u].first, ", ", units_[u].second, ")");
  return u;
}

std::vector<int64_t> ShardLayout::split(int64_t begin, int64_t end) const {
  const auto [u0, u1] = units_[unit_of(begin, end)];
  return split_by_shards(begin - u0, end - u0, u1 - u0, world_);
}

int64_t ShardLayout::local_of(int64_t begin, int64_t end) const {
  const Piece& p = pieces_[unit_of(begin, end)];
  return p.local + std::clamp(begin, p.begin, p.end) - p.begin;
}

}  // namespace tt::parallel
