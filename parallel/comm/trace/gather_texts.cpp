// Collecting every rank's text (see gather_texts.h).
#include "parallel/comm/trace/gather_texts.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/error.h"

namespace tt::parallel {

std::vector<std::string> gather_texts(Communicator& comm, const std::string& mine) {
  const int world = comm.size(), me = comm.rank();
  if (world == 1) return {mine};
  TT_ASSERT(mine.size() < (size_t(1) << 31), "text of ", mine.size(), " bytes is too large to gather");
  std::vector<uint32_t> sizes(size_t(world), 0);
  sizes[size_t(me)] = uint32_t(mine.size());
  comm.all_reduce(sizes.data(), world, DType::kU32, ReduceOp::kSum)->wait();
  std::vector<size_t> word_at(size_t(world) + 1, 0);
  for (int r = 0; r < world; ++r) word_at[size_t(r) + 1] = word_at[size_t(r)] + (size_t(sizes[size_t(r)]) + 3) / 4;
  std::vector<uint32_t> words(std::max<size_t>(word_at.back(), 1), 0);
  if (!mine.empty()) std::memcpy(&words[word_at[size_t(me)]], mine.data(), mine.size());
  comm.all_reduce(words.data(), int64_t(words.size()), DType::kU32, ReduceOp::kSum)->wait();
  std::vector<std::string> texts;
  for (int r = 0; r < world; ++r)
    texts.emplace_back(reinterpret_cast<const char*>(&words[word_at[size_t(r)]]), size_t(sizes[size_t(r)]));
  return texts;
}

}  // namespace tt::parallel
