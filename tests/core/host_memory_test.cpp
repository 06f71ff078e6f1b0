// Host memory available to the process: a real reading, bounded by the machine's total memory.
#include "core/host_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace tt {
namespace {

TEST(HostMemory, AvailableIsPositiveAndAtMostThePhysicalMemory) {
  const HostMemory m = host_memory_available();
  const uint64_t physical = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  EXPECT_GT(m.available_bytes, 0u);
  EXPECT_LE(m.available_bytes, physical);
  EXPECT_FALSE(m.limited_by.empty());
}

}  // namespace
}  // namespace tt
