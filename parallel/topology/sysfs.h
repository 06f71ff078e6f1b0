// Reading the host's PCIe and NUMA layout from Linux sysfs: a GPU's trained and maximum PCIe link
// (generation, width), its NUMA node and nearby CPUs, and the host's CPU and NUMA node counts.
//
// Design: every reader takes the sysfs root ("/sys" on a real machine) as a parameter, so the same
// code is tested on recorded trees under tests/fixtures/topology/sysfs-*/. Missing files mean
// "unknown" (0 or -1), never an error: containers and VMs often hide parts of sysfs.
#pragma once

#include <string>
#include <vector>

namespace tt::topology {

// "0000:1B:00.0" (CUDA), "00000000:1b:00.0" (NVML), "1b:00.0" -> "0000:1b:00.0" (sysfs form: 4-digit
// domain, lower case). "" when `id` is not a PCI address.
std::string normalize_pci_bus_id(const std::string& id);

// PCIe generation from a sysfs link speed: "2.5 GT/s PCIe" -> 1, "5.0 GT/s" -> 2, "8.0 GT/s" -> 3,
// "16.0 GT/s PCIe" -> 4, "32.0 GT/s PCIe" -> 5, "64.0 GT/s PCIe" -> 6; 0 when unknown/unparsable.
int pcie_gen_from_speed(const std::string& speed);

// Linux cpulist format: "0-3,8,10-11" -> {0,1,2,3,8,10,11}; whitespace/newline tolerated. Empty
// when malformed (a reversed range, a non-number or a CPU number of 65536 or more anywhere).
std::vector<int> parse_cpulist(const std::string& list);

struct PciDeviceInfo {
  bool found = false;              // the device directory exists
  int gen = 0, width = 0;          // current_link_speed / current_link_width (trained link)
  int max_gen = 0, max_width = 0;  // max_link_speed / max_link_width (device capability)
  int numa_node = -1;              // -1: unknown or a single-node machine that reports -1
  std::string local_cpulist;       // as in sysfs, trimmed
};

// <root>/bus/pci/devices/<normalized bus id>/{current,max}_link_{speed,width}, numa_node,
// local_cpulist.
PciDeviceInfo read_pci_device(const std::string& sysfs_root, const std::string& bus_id);

struct HostInfo {
  int cpus = 0;        // logical CPUs online (<root>/devices/system/cpu/online); 0 = unknown
  int numa_nodes = 0;  // <root>/devices/system/node/online, else node<N> directories; 0 = unknown
};
HostInfo read_host_info(const std::string& sysfs_root);

}  // namespace tt::topology
