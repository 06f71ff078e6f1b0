// Fuzz target: recorded NVLink records (parallel/topology/nvlink.h parse_nvlink_records, the
// tests/fixtures/topology/nvml-*.txt format), interpreted into links when they parse.
#include <string>
#include <vector>

#include "parallel/topology/nvlink.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tt::fuzz::expect_only_tt_errors([&] {
    std::vector<std::string> bus_ids;
    std::vector<tt::topology::NvLinkRecord> records;
    tt::topology::parse_nvlink_records(text, "fuzz", &bus_ids, &records);
    (void)tt::topology::interpret_nvlinks(bus_ids, records, 25.0, 0);
    (void)tt::topology::format_nvlink_records(bus_ids, records);
  });
  return 0;
}
