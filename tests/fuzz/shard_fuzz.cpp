// Fuzz target: llm.c token shards (data/shard.h ShardReader): the header against the file size, then
// every token read back.
#include <string>
#include <vector>

#include "data/shard.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      tt::fuzz::write_scratch_file("shard.bin", std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] {
    tt::data::ShardReader reader(path);
    const int64_t n = reader.num_tokens();
    std::vector<int32_t> tokens(size_t(n > 0 ? n : 0));
    uint64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += reader.token(i);
    if (n > 0) reader.copy_tokens(0, n, tokens.data());
    (void)sum;
  });
  tt::fuzz::expect_only_tt_errors([&] { tt::data::resolve_shards(path); });
  return 0;
}
