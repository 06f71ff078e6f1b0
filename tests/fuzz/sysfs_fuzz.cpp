// Fuzz target: the sysfs value parsers (parallel/topology/sysfs.h): cpulists, PCIe link speeds, PCI
// bus ids, and read_pci_device / read_host_info over a scratch tree whose every file holds the input.
// They never throw: unknown or malformed values mean "unknown".
#include <string>

#include "core/fs.h"
#include "parallel/topology/sysfs.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const char* kBus = "0000:01:00.0";
const char* kFiles[] = {"current_link_speed", "current_link_width", "max_link_speed",
                        "max_link_width",     "numa_node",          "local_cpulist"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tt::fuzz::expect_only_tt_errors([&] {
    (void)tt::topology::parse_cpulist(text);
    (void)tt::topology::pcie_gen_from_speed(text);
    (void)tt::topology::normalize_pci_bus_id(text);
    static const bool tree = [] {
      tt::ensure_dir(tt::fuzz::scratch_dir() + "/sys/bus/pci/devices/" + kBus);
      tt::ensure_dir(tt::fuzz::scratch_dir() + "/sys/devices/system/cpu");
      tt::ensure_dir(tt::fuzz::scratch_dir() + "/sys/devices/system/node");
      return true;
    }();
    (void)tree;
    for (const char* f : kFiles)
      tt::fuzz::write_scratch_file(std::string("sys/bus/pci/devices/") + kBus + "/" + f, text);
    tt::fuzz::write_scratch_file("sys/devices/system/cpu/online", text);
    tt::fuzz::write_scratch_file("sys/devices/system/node/online", text);
    (void)tt::topology::read_pci_device(tt::fuzz::scratch_dir() + "/sys", kBus);
    (void)tt::topology::read_host_info(tt::fuzz::scratch_dir() + "/sys");
  });
  return 0;
}
