// sysfs readers (see sysfs.h). Plain file reads; nothing here needs privileges.
#include "parallel/topology/sysfs.h"

#include <dirent.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tt::topology {

namespace {

// First line of a small file, trimmed; "" when it cannot be read.
std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  const size_t b = line.find_first_not_of(" \t\r\n");
  const size_t e = line.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : line.substr(b, e - b + 1);
}

// Whole string as a non-negative decimal integer, else `fallback`.
int to_int(const std::string& s, int fallback) {
  if (s.empty()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  return (end && *end == '\0') ? int(v) : fallback;
}

bool all_hex(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isxdigit((unsigned char)c)) return false;
  return true;
}

}  // namespace

std::string normalize_pci_bus_id(const std::string& raw) {
  // [domain:]bus:device.function
  std::string id;
  for (char c : raw) id += char(std::tolower((unsigned char)c));
  const size_t dot = id.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string func = id.substr(dot + 1);
  const std::string head = id.substr(0, dot);
  const size_t c2 = head.rfind(':');
  if (c2 == std::string::npos) return "";
  const std::string dev = head.substr(c2 + 1);
  const std::string rest = head.substr(0, c2);
  const size_t c1 = rest.rfind(':');
  const std::string bus = c1 == std::string::npos ? rest : rest.substr(c1 + 1);
  std::string domain = c1 == std::string::npos ? "0" : rest.substr(0, c1);
  if (!all_hex(domain) || !all_hex(bus) || !all_hex(dev) || !all_hex(func)) return "";
  const unsigned long d = std::strtoul(domain.c_str(), nullptr, 16), b = std::strtoul(bus.c_str(), nullptr, 16),
                      v = std::strtoul(dev.c_str(), nullptr, 16), f = std::strtoul(func.c_str(), nullptr, 16);
  if (d > 0xffff || b > 0xff || v > 0x1f || f > 0x7) return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04lx:%02lx:%02lx.%lx", d, b, v, f);
  return buf;
}

int pcie_gen_from_speed(const std::string& speed) {
  char* end = nullptr;
  const double gts = std::strtod(speed.c_str(), &end);
  if (end == speed.c_str() || speed.find("GT/s") == std::string::npos) return 0;
  // Per-lane signalling rate of each generation.
  const struct {
    double gts;
    int gen;
  } kGens[] = {{2.5, 1}, {5.0, 2}, {8.0, 3}, {16.0, 4}, {32.0, 5}, {64.0, 6}};
  for (const auto& g : kGens)
    if (gts > g.gts * 0.95 && gts < g.gts * 1.05) return g.gen;
  return 0;
}

constexpr int kMaxCpus = 1 << 16;

std::vector<int> parse_cpulist(const std::string& list) {
  std::vector<int> cpus;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t b = item.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) continue;
    item = item.substr(b, item.find_last_not_of(" \t\r\n") - b + 1);
    const size_t dash = item.find('-');
    const int lo = to_int(item.substr(0, dash), -1);
    const int hi = dash == std::string::npos ? lo : to_int(item.substr(dash + 1), -1);
    // Linux numbers CPUs below 2^16 (NR_CPUS); a larger one is damage, and would have "0-2000000000"
    // expand into billions of entries (and ++c overflow at INT_MAX).
    if (lo < 0 || hi < lo || hi >= kMaxCpus) return {};
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

PciDeviceInfo read_pci_device(const std::string& sysfs_root, const std::string& bus_id) {
  PciDeviceInfo info;
  const std::string id = normalize_pci_bus_id(bus_id);
  if (id.empty()) return info;
  const std::string dir = sysfs_root + "/bus/pci/devices/" + id + "/";
  std::ifstream probe(dir + "vendor");
  const std::string speed = read_line(dir + "current_link_speed");
  info.found = bool(probe) || !speed.empty() || !read_line(dir + "numa_node").empty();
  if (!info.found) return info;
  info.gen = pcie_gen_from_speed(speed);
  info.width = to_int(read_line(dir + "current_link_width"), 0);
  info.max_gen = pcie_gen_from_speed(read_line(dir + "max_link_speed"));
  info.max_width = to_int(read_line(dir + "max_link_width"), 0);
  const std::string numa = read_line(dir + "numa_node");
  info.numa_node = numa.empty() ? -1 : std::atoi(numa.c_str());  // the kernel writes -1 when unknown
  info.local_cpulist = read_line(dir + "local_cpulist");
  return info;
}

HostInfo read_host_info(const std::string& sysfs_root) {
  HostInfo h;
  h.cpus = int(parse_cpulist(read_line(sysfs_root + "/devices/system/cpu/online")).size());
  h.numa_nodes = int(parse_cpulist(read_line(sysfs_root + "/devices/system/node/online")).size());
  if (h.numa_nodes == 0) {
    if (DIR* d = opendir((sysfs_root + "/devices/system/node").c_str())) {
      while (const dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() > 4 && name.compare(0, 4, "node") == 0 && to_int(name.substr(4), -1) >= 0) ++h.numa_nodes;
      }
      closedir(d);
    }
  }
  return h;
}

}  // namespace tt::topology
