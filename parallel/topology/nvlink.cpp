// NVML via dlopen and the pure interpretation of its NVLink records (see nvlink.h).
//
// The few NVML declarations are written out here (nvml.h is not a build dependency). They match the
// NVML ABI: nvmlReturn_t is an int-sized enum (0 = NVML_SUCCESS), nvmlEnableState_t an int-sized
// enum (1 = enabled), nvmlPciInfo_t as documented for the _v2 entry points.
#include "parallel/topology/nvlink.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "parallel/topology/sysfs.h"

namespace tt::topology {

namespace {

using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
using NvmlInitFn = NvmlReturn (*)();
using NvmlShutdownFn = NvmlReturn (*)();
using NvmlHandleByBusIdFn = NvmlReturn (*)(const char*, NvmlDevice*);
using NvmlLinkStateFn = NvmlReturn (*)(NvmlDevice, unsigned int, int*);
using NvmlRemotePciFn = NvmlReturn (*)(NvmlDevice, unsigned int, NvmlPciInfo*);

constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;
constexpr unsigned int kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

}  // namespace

NvLinkQuery query_nvlinks(const std::vector<std::string>& gpu_bus_ids) {
  NvLinkQuery q;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    q.note = "NVML (libnvidia-ml.so.1) not found: no NVLink information";
    return q;
  }
  const auto init = reinterpret_cast<NvmlInitFn>(dlsym(lib, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<NvmlShutdownFn>(dlsym(lib, "nvmlShutdown"));
  const auto by_bus_id = reinterpret_cast<NvmlHandleByBusIdFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  const auto link_state = reinterpret_cast<NvmlLinkStateFn>(dlsym(lib, "nvmlDeviceGetNvLinkState"));
  const auto remote_pci = reinterpret_cast<NvmlRemotePciFn>(dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2"));
  if (!init || !shutdown || !by_bus_id || !link_state || !remote_pci) {
    q.note = "NVML lacks the NVLink entry points (driver too old?): no NVLink information";
    dlclose(lib);
    return q;
  }
  if (const NvmlReturn r = init(); r != kNvmlSuccess) {
    q.note = str("nvmlInit_v2 failed (NVML error ", r, "): no NVLink information");
    dlclose(lib);
    return q;
  }
  q.available = true;
  for (size_t g = 0; g < gpu_bus_ids.size(); ++g) {
    NvmlDevice dev = nullptr;
    const std::string id = normalize_pci_bus_id(gpu_bus_ids[g]);
    if (by_bus_id(id.c_str(), &dev) != kNvmlSuccess) {
      q.note += str(q.note.empty() ? "" : "; ", "NVML does not know GPU ", g, " (", gpu_bus_ids[g], ")");
      continue;
    }
    for (unsigned int link = 0; link < kNvmlMaxLinks; ++link) {
      int state = 0;
      if (link_state(dev, link, &state) != kNvmlSuccess) continue;  // no such link / not supported
      NvLinkRecord rec;
      rec.gpu = int(g);
      rec.link = int(link);
      rec.active = state == kNvmlFeatureEnabled;
      NvmlPciInfo pci{};
      if (rec.active && remote_pci(dev, link, &pci) == kNvmlSuccess) {
        pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
        rec.remote_bus_id = normalize_pci_bus_id(pci.bus_id);
      }
      q.records.push_back(rec);
    }
  }
  shutdown();
  dlclose(lib);
  return q;
}

double nvlink_gbps_per_link(int compute_capability) {
  if (compute_capability == 86) return 14.0625;
  if (compute_capability >= 100) return 50;
  return 25;
}

std::vector<Link> interpret_nvlinks(const std::vector<std::string>& gpu_bus_ids,
                                    const std::vector<NvLinkRecord>& records, double gbps_per_link, int node) {
  const int n = int(gpu_bus_ids.size());
  std::map<std::string, int> gpu_of;
  for (int g = 0; g < n; ++g) gpu_of[normalize_pci_bus_id(gpu_bus_ids[g])] = g;
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> fabric(n, 0);
  std::set<std::pair<int, int>> seen;  // (gpu, link): a record listed twice counts once
  for (const NvLinkRecord& r : records) {
    if (!r.active || r.gpu < 0 || r.gpu >= n || !seen.insert({r.gpu, r.link}).second) continue;
    const std::string remote = normalize_pci_bus_id(r.remote_bus_id);
    if (remote.empty()) continue;
    const auto it = gpu_of.find(remote);
    if (it == gpu_of.end())
      ++fabric[r.gpu];
    else if (it->second != r.gpu)
      ++direct[r.gpu][it->second];
  }
  std::vector<Link> links;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const int width = std::min(direct[a][b], direct[b][a]) + std::min(fabric[a], fabric[b]);
      if (width == 0) continue;
      Link l;
      l.set_kind(LINK_NVLINK);
      l.set_node_a(node);
      l.set_gpu_a(a);
      l.set_node_b(node);
      l.set_gpu_b(b);
      l.set_bandwidth_gbps(width * gbps_per_link);
      links.push_back(l);
    }
  return links;
}

std::string format_nvlink_records(const std::vector<std::string>& gpu_bus_ids,
                                  const std::vector<NvLinkRecord>& records) {
  std::ostringstream os;
  for (size_t g = 0; g < gpu_bus_ids.size(); ++g) os << "gpu " << g << " " << gpu_bus_ids[g] << "\n";
  for (const NvLinkRecord& r : records)
    os << "nvlink " << r.gpu << " " << r.link << " " << (r.remote_bus_id.empty() ? "-" : r.remote_bus_id) << " "
       << (r.active ? "active" : "inactive") << "\n";
  return os.str();
}

void parse_nvlink_records(const std::string& text, const std::string& where, std::vector<std::string>* gpu_bus_ids,
                          std::vector<NvLinkRecord>* records) {
  gpu_bus_ids->clear();
  records->clear();
  std::istringstream in(text);
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string kind;
    if (!(ls >> kind)) continue;
    auto bad = [&](const std::string& what) {
      throw Error(ErrorKind::kData, str(what, " in line ", line_no, ": '", line, "'"), where,
                  "expected 'gpu <index> <bus id>' or 'nvlink <gpu> <link> <remote bus id|-> <active|inactive>'");
    };
    std::string extra;
    if (kind == "gpu") {
      int index = -1;
      std::string bus;
      if (!(ls >> index >> bus) || (ls >> extra)) bad("malformed gpu record");
      if (index != int(gpu_bus_ids->size())) bad(str("gpu index ", index, " out of order"));
      if (normalize_pci_bus_id(bus).empty()) bad("bad PCI bus id '" + bus + "'");
      gpu_bus_ids->push_back(bus);
    } else if (kind == "nvlink") {
      NvLinkRecord r;
      std::string remote, state;
      if (!(ls >> r.gpu >> r.link >> remote >> state) || (ls >> extra)) bad("malformed nvlink record");
      if (state != "active" && state != "inactive") bad("state must be active or inactive");
      if (r.gpu < 0 || r.gpu >= int(gpu_bus_ids->size())) bad(str("nvlink record for unknown gpu ", r.gpu));
      r.active = state == "active";
      r.remote_bus_id = remote == "-" ? "" : remote;
      records->push_back(r);
    } else {
      bad("unknown record '" + kind + "'");
    }
  }
}

}  // namespace tt::topology
