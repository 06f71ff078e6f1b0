// sysfs parsing on the recorded trees in tests/fixtures/topology/sysfs-*.
#include "parallel/topology/sysfs.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace tt::topology {
namespace {

std::string fixture(const std::string& name) { return test::source_dir() + "/tests/fixtures/topology/" + name; }

TEST(Sysfs, PcieGenerationFromLinkSpeed) {
  EXPECT_EQ(pcie_gen_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_gen_from_speed("5.0 GT/s PCIe"), 2);
  EXPECT_EQ(pcie_gen_from_speed("5 GT/s"), 2);  // older kernels
  EXPECT_EQ(pcie_gen_from_speed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcie_gen_from_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_gen_from_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_gen_from_speed("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(pcie_gen_from_speed("Unknown"), 0);
  EXPECT_EQ(pcie_gen_from_speed(""), 0);
  EXPECT_EQ(pcie_gen_from_speed("16.0"), 0);
}

TEST(Sysfs, Cpulists) {
  EXPECT_EQ(parse_cpulist("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpulist("5"), (std::vector<int>{5}));
  EXPECT_TRUE(parse_cpulist("").empty());
  EXPECT_TRUE(parse_cpulist("3-1").empty());
  EXPECT_TRUE(parse_cpulist("0-x").empty());
  // Found by tests/fuzz (sysfs): a range of a billion CPUs (or up to INT_MAX, where the loop counter
  // overflowed) is damage, not a list to expand.
  EXPECT_TRUE(parse_cpulist("0-1111111111").empty());
  EXPECT_TRUE(parse_cpulist("2147483647").empty());
  EXPECT_EQ(parse_cpulist("65535"), (std::vector<int>{65535}));
  EXPECT_EQ(parse_cpulist("0-55,112-167").size(), 112u);
}

TEST(Sysfs, PciBusIdForms) {
  EXPECT_EQ(normalize_pci_bus_id("0000:1B:00.0"), "0000:1b:00.0");      // CUDA
  EXPECT_EQ(normalize_pci_bus_id("00000000:1b:00.0"), "0000:1b:00.0");  // NVML
  EXPECT_EQ(normalize_pci_bus_id("1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0001:c1:1f.7"), "0001:c1:1f.7");
  EXPECT_EQ(normalize_pci_bus_id(""), "");
  EXPECT_EQ(normalize_pci_bus_id("0000:1b:00"), "");
  EXPECT_EQ(normalize_pci_bus_id("0000:1g:00.0"), "");
  EXPECT_EQ(normalize_pci_bus_id("0000:1b:20.0"), "");  // device is 5 bits
}

TEST(Sysfs, Rtx4090Workstation) {
  const std::string root = fixture("sysfs-4090");
  const HostInfo host = read_host_info(root);
  EXPECT_EQ(host.cpus, 32);
  EXPECT_EQ(host.numa_nodes, 1);

  const PciDeviceInfo idle = read_pci_device(root, "0000:01:00.0");
  ASSERT_TRUE(idle.found);
  EXPECT_EQ(idle.gen, 1);  // downtrained while idle
  EXPECT_EQ(idle.width, 16);
  EXPECT_EQ(idle.max_gen, 4);
  EXPECT_EQ(idle.max_width, 16);
  EXPECT_EQ(idle.numa_node, -1);
  EXPECT_EQ(idle.local_cpulist, "0-31");

  const PciDeviceInfo x8 = read_pci_device(root, "0000:41:00.0");  // CUDA spelling
  ASSERT_TRUE(x8.found);
  EXPECT_EQ(x8.gen, 4);
  EXPECT_EQ(x8.width, 8);
  EXPECT_EQ(x8.max_width, 16);

  EXPECT_FALSE(read_pci_device(root, "0000:02:00.0").found);
  EXPECT_FALSE(read_pci_device(root, "garbage").found);
}

TEST(Sysfs, H100DualSocket) {
  const std::string root = fixture("sysfs-h100");
  const HostInfo host = read_host_info(root);
  EXPECT_EQ(host.cpus, 224);
  EXPECT_EQ(host.numa_nodes, 2);  // from node0/ node1/ (no node/online in this tree)

  const PciDeviceInfo g0 = read_pci_device(root, "00000000:1B:00.0");  // NVML spelling
  ASSERT_TRUE(g0.found);
  EXPECT_EQ(g0.gen, 5);
  EXPECT_EQ(g0.width, 16);
  EXPECT_EQ(g0.max_gen, 5);
  EXPECT_EQ(g0.numa_node, 0);
  const PciDeviceInfo g4 = read_pci_device(root, "0000:9d:00.0");
  EXPECT_EQ(g4.numa_node, 1);
  EXPECT_EQ(parse_cpulist(g4.local_cpulist).size(), 112u);
}

TEST(Sysfs, MissingRootIsUnknownNotAnError) {
  const HostInfo host = read_host_info("/nonexistent-sysfs");
  EXPECT_EQ(host.cpus, 0);
  EXPECT_EQ(host.numa_nodes, 0);
  EXPECT_FALSE(read_pci_device("/nonexistent-sysfs", "0000:01:00.0").found);
}

}  // namespace
}  // namespace tt::topology
