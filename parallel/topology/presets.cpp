// Preset topologies from public figures. Every number below says where it comes from: "DESIGN.md"
// means the "Facts to build on (public figures)" table of /DESIGN.md (shared design notes); other
// sources are named. Bandwidths are GB/s (1e9 B/s) per direction, latencies microseconds.
//
// Design: presets are composed from a node table and a network table (see presets.h for the naming
// scheme), so a 2-node H100 preset cannot disagree with the 1-node one.
#include "parallel/topology/presets.h"

#include <cstdlib>
#include <string>

#include "core/device_info.h"
#include "core/did_you_mean.h"
#include "core/error.h"
#include "parallel/topology/topology_io.h"

namespace tt::topology {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kMaxPresetNodes = 64;

struct NodePreset {
  const char* name;
  const char* gpu_name;  // as the CUDA runtime reports it
  int compute_capability;
  double memory_gib;
  int pcie_gen;
  int gpus;
  LinkKind gpu_link;     // between every GPU pair of the node
  double gpu_link_gbps;  // per direction
  double gpu_link_latency_us;
  bool p2p;                 // GPU-GPU P2P available (and assumed verified)
  double intra_busbw_gbps;  // 8-GPU all-reduce bus bandwidth seen in practice
  double intra_latency_us;  // small-message all-reduce latency
};

// Peak FLOP/s come from the device table (core/device_info.h).
//
// RTX 4090: 165 TFLOP/s bf16, 24 GB (DESIGN.md); GPU-GPU over PCIe 4.0 x16 (~64 GB/s bidirectional
// = 32 GB/s raw per direction, ~25 GB/s achievable, DESIGN.md), no P2P (the driver disables it), so
// GPU-GPU traffic is staged through host memory: LINK_HOST. 8-GPU all-reduce busbw ~20-28 GB/s via
// host memory (DESIGN.md): 22. Latency ~10 us (host staging; estimate, not in DESIGN.md).
//
// RTX 3090 (not in DESIGN.md, estimates): 71 TFLOP/s dense bf16 with fp32 accumulate (NVIDIA GA102
// whitepaper), 24 GB, PCIe 4.0 x16. Modelled as PCIe P2P (LINK_PCIE); whether a GeForce driver
// allows P2P varies, which is why the probe verifies it. busbw ~15-20 GB/s: 17.
//
// A100 80GB SXM: 312 TFLOP/s bf16, 80 GB (DESIGN.md); NVLink 600 GB/s bidirectional = 300 per
// direction through NVSwitch (DESIGN.md); 8-GPU busbw ~200-235 (DESIGN.md): 220; latency ~5 us.
//
// H100 SXM: 989 TFLOP/s bf16, 80 GB (DESIGN.md), PCIe 5.0; NVLink 900 GB/s bidirectional = 450
// per direction (DESIGN.md); 8-GPU busbw ~370-480 (DESIGN.md): 400; latency ~5 us.
const NodePreset kNodes[] = {
    {"8x4090-pcie", "NVIDIA GeForce RTX 4090", 89, 24, 4, 8, LINK_HOST, 25, 10, false, 22, 10},
    {"8x3090-pcie", "NVIDIA GeForce RTX 3090", 86, 24, 4, 8, LINK_PCIE, 25, 10, true, 17, 10},
    {"8xa100-sxm", "NVIDIA A100-SXM4-80GB", 80, 80, 4, 8, LINK_NVLINK, 300, 5, true, 220, 5},
    {"8xh100-sxm", "NVIDIA H100 80GB HBM3", 90, 80, 5, 8, LINK_NVLINK, 450, 5, true, 400, 5},
};

struct NetworkPreset {
  const char* name;
  double gbps;  // line rate per direction, all NICs of a node together
  double latency_us;
  double busbw_gbps;  // inter-node all-reduce busbw: ~90% of line rate (typical nccl-tests on IB/RoCE)
};

// DESIGN.md names 2-node variants over 1/100/400 Gb/s; line rates are the standards' (1 Gb/s =
// 0.125 GB/s). Latencies are typical figures, not from DESIGN.md: TCP over 1 GbE ~50 us, 100 GbE
// (RoCE/TCP) ~10 us, InfiniBand ~5 us (HDR 100G) and ~3 us (NDR 400G, 4x HDR 200G rails).
const NetworkPreset kNetworks[] = {
    {"1gbe", 0.125, 50, 0.9 * 0.125}, {"100gbe", 12.5, 10, 0.9 * 12.5}, {"100g-ib", 12.5, 5, 0.9 * 12.5},
    {"400g-ib", 50, 3, 0.9 * 50},     {"4x200g-ib", 100, 3, 0.9 * 100},
};

const NodePreset* find_node(const std::string& name) {
  for (const NodePreset& n : kNodes)
    if (name == n.name) return &n;
  return nullptr;
}

Node make_node(const NodePreset& p, int index) {
  Node node;
  node.set_hostname(str("node", index));
  node.set_cpu_cores(0);  // unknown in a preset
  node.set_numa_nodes(0);
  for (int g = 0; g < p.gpus; ++g) {
    Gpu* gpu = node.add_gpus();
    gpu->set_index(g);
    gpu->set_name(p.gpu_name);
    gpu->set_compute_capability(p.compute_capability);
    gpu->set_memory_bytes(uint64_t(p.memory_gib * kGiB));
    gpu->set_numa_node(-1);
    gpu->set_pcie_gen(p.pcie_gen);
    gpu->set_pcie_width(16);
    gpu->set_peak_bf16_tflops(tt::peak_bf16_tflops(p.gpu_name).value_or(0));
  }
  return node;
}

Topology make_topology(const std::string& name, const NodePreset& p, int num_nodes, const NetworkPreset* net) {
  Topology t;
  t.set_name(name);
  t.set_source("preset");
  t.set_gpus_per_node(p.gpus);
  t.set_ranks_per_node(p.gpus);
  t.set_intra_node_busbw_gbps(p.intra_busbw_gbps);
  t.set_intra_node_latency_us(p.intra_latency_us);
  t.set_p2p_all_verified(p.p2p);
  for (int n = 0; n < num_nodes; ++n) {
    *t.add_nodes() = make_node(p, n);
    for (int a = 0; a < p.gpus; ++a)
      for (int b = a + 1; b < p.gpus; ++b) {
        Link* l = t.add_links();
        l->set_kind(p.gpu_link);
        l->set_node_a(n);
        l->set_gpu_a(a);
        l->set_node_b(n);
        l->set_gpu_b(b);
        l->set_bandwidth_gbps(p.gpu_link_gbps);
        l->set_latency_us(p.gpu_link_latency_us);
        l->set_p2p_verified(p.p2p);
      }
  }
  if (net) {
    t.set_inter_node_busbw_gbps(net->busbw_gbps);
    t.set_inter_node_latency_us(net->latency_us);
    add_network_links(t, num_nodes, net->gbps, net->latency_us, /*measured=*/false);
  }
  return t;
}

// "12" -> 12; -1 unless the whole string is a decimal number without a sign or leading zero.
int parse_count(const std::string& s) {
  if (s.empty() || s.size() > 3 || s[0] == '0') return -1;
  for (char c : s)
    if (c < '0' || c > '9') return -1;
  return std::atoi(s.c_str());
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const NodePreset& n : kNodes) names.push_back(n.name);
  for (const NodePreset& n : kNodes)
    for (const NetworkPreset& net : kNetworks) names.push_back(str("2x", n.name, "-", net.name));
  return names;
}

Topology preset_topology(const std::string& name) {
  if (const NodePreset* node = find_node(name)) return make_topology(name, *node, 1, nullptr);
  for (const NetworkPreset& net : kNetworks) {
    const std::string suffix = str("-", net.name);
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const std::string prefix = name.substr(0, name.size() - suffix.size());  // "2x8xh100-sxm"
    const size_t x = prefix.find('x');
    if (x == std::string::npos) continue;
    const int nodes = parse_count(prefix.substr(0, x));
    const NodePreset* node = find_node(prefix.substr(x + 1));
    if (node && nodes >= 2 && nodes <= kMaxPresetNodes) return make_topology(name, *node, nodes, &net);
  }
  std::string valid;
  for (const std::string& n : preset_names()) valid += (valid.empty() ? "" : ", ") + n;
  const std::string near = closest_name(name, preset_names());
  throw Error(
      ErrorKind::kConfig, "unknown topology preset '" + name + "'", "--preset",
      str(near.empty() ? "" : "did you mean '" + near + "'? ", "valid presets: ", valid,
          "; also <N>x<node preset>-<network> for N = 2..", kMaxPresetNodes, " (`topotrain probe --list-presets`)"));
}

}  // namespace tt::topology
