// The alpha-beta collective model (see collective_cost.h for the formulas and their simplifications).
#include "parallel/cost/collective_cost.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/device_info.h"

namespace tt::cost {

using topology::LinkKind;

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllGather:
      return "all_gather";
  }
  return "?";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

const char* payload_name(Payload p) {
  switch (p) {
    case Payload::kFp32:
      return "fp32";
    case Payload::kBf16:
      return "bf16";
    case Payload::kInt8:
      return "int8+ef";
    case Payload::kFp8:
      return "fp8+ef";
  }
  return "?";
}

double payload_bytes_per_elem(Payload p) {
  switch (p) {
    case Payload::kFp32:
      return 4.0;
    case Payload::kBf16:
      return 2.0;
    case Payload::kInt8:
    case Payload::kFp8:
      return 1.0 + 4.0 / kInt8BlockElems;
  }
  return 4.0;
}

double codec_bytes_per_elem(Payload p) {
  if (p == Payload::kFp32) return 0.0;
  const double wire = payload_bytes_per_elem(p);
  const double error_feedback = p == Payload::kInt8 || p == Payload::kFp8 ? 8.0 : 0.0;
  return 2.0 * (4.0 + wire) + error_feedback;
}

double codec_time_s(Payload p, int64_t elems, double mem_bw_gbps) {
  TT_ASSERT(mem_bw_gbps > 0, "codec_time_s needs a memory bandwidth");
  return double(elems) * codec_bytes_per_elem(p) / (mem_bw_gbps * 1e9);
}

double codec_time_s(Payload p, int64_t elems, const Cluster& cluster) {
  if (p == Payload::kFp32) return 0.0;
  const CodecFigures& f = cluster.codec[int(p)];
  if (!f.measured()) return codec_time_s(p, elems, cluster.mem_bw_gbps);
  const double bytes = 4.0 * double(elems);
  return bytes / (f.compress_gbps * 1e9) + bytes / (f.decompress_add_gbps * 1e9);
}

double decompress_add_time_s(Payload p, int64_t elems, const Cluster& cluster) {
  if (p == Payload::kFp32) return 0.0;
  const CodecFigures& f = cluster.codec[int(p)];
  if (f.measured()) return 4.0 * double(elems) / (f.decompress_add_gbps * 1e9);
  TT_ASSERT(cluster.mem_bw_gbps > 0, "decompress_add_time_s needs a memory bandwidth");
  return double(elems) * (payload_bytes_per_elem(p) + 8) / (cluster.mem_bw_gbps * 1e9);
}

std::string LinkClass::describe() const {
  const char* what = "link";
  switch (kind) {
    case topology::LINK_NVLINK:
      what = "NVLink";
      break;
    case topology::LINK_PCIE:
      what = "PCIe P2P";
      break;
    case topology::LINK_HOST:
      what = "PCIe via host (no P2P)";
      break;
    case topology::LINK_SHM:
      what = "shared memory";
      break;
    case topology::LINK_NETWORK: {
      // Name Ethernet speeds from the bandwidth (busbw is ~90% of line rate).
      const double gbit = busbw_gbps * 8.0;
      const std::string figure = str(busbw_gbps, " GB/s", from_busbw ? " busbw" : " nominal");
      if (gbit <= 1.5) return "1 GbE (" + figure + ")";
      if (gbit <= 12) return "10 GbE (" + figure + ")";
      return "network " + figure;
    }
    default:
      break;
  }
  return str(what, " ", busbw_gbps, " GB/s", from_busbw ? " busbw" : " nominal");
}

namespace {

double default_latency_us(LinkKind kind) {
  switch (kind) {
    case topology::LINK_NVLINK:
      return 3.0;
    case topology::LINK_PCIE:
      return 5.0;
    case topology::LINK_HOST:
      return 10.0;
    case topology::LINK_SHM:
      return 2.0;
    case topology::LINK_NETWORK:
      return kDefaultInterNodeLatencyUs;
    default:
      return 5.0;
  }
}

bool is_intra_gpu_kind(LinkKind k) {
  return k == topology::LINK_NVLINK || k == topology::LINK_PCIE || k == topology::LINK_HOST || k == topology::LINK_SHM;
}

// The slowest link of the wanted class (intra: within node 0; inter: any network link), or kind
// LINK_UNKNOWN with bandwidth 0 when there is none.
LinkClass slowest_link(const topology::Topology& topo, bool intra) {
  LinkClass best;
  double latency = 0;
  for (const auto& l : topo.links()) {
    const bool is_intra = is_intra_gpu_kind(l.kind()) && l.node_a() == 0 && l.node_b() == 0;
    const bool is_inter = l.kind() == topology::LINK_NETWORK;
    if ((intra && !is_intra) || (!intra && !is_inter) || l.bandwidth_gbps() <= 0) continue;
    if (best.kind == topology::LINK_UNKNOWN || l.bandwidth_gbps() < best.busbw_gbps) {
      best.busbw_gbps = l.bandwidth_gbps();
      best.kind = l.kind();
    }
    latency = std::max(latency, l.latency_us());
  }
  best.latency_us = latency > 0 ? latency : default_latency_us(best.kind);
  return best;
}

int ranks_per_node_of(const topology::Topology& topo) {
  if (topo.ranks_per_node() > 0) return topo.ranks_per_node();
  if (topo.gpus_per_node() > 0) return topo.gpus_per_node();
  if (topo.nodes_size() > 0 && topo.nodes(0).gpus_size() > 0) return topo.nodes(0).gpus_size();
  if (topo.nodes_size() > 0 && topo.nodes(0).ranks_size() > 0) return topo.nodes(0).ranks_size();
  return 1;
}

}  // namespace

Cluster cluster_of(const topology::Topology& topo, int ranks) {
  const std::string where = topo.name().empty() ? std::string("topology") : "topology '" + topo.name() + "'";
  if (topo.nodes_size() == 0)
    throw Error(ErrorKind::kConfig, "topology has no nodes", where,
                "use a preset (--preset) or a file written by `topotrain probe --dump FILE`");
  if (ranks < 0) throw Error(ErrorKind::kConfig, str("rank count ", ranks, " is negative"), where);
  const int per_node = ranks_per_node_of(topo);
  const int topo_ranks = per_node * topo.nodes_size();
  if (ranks == 0) ranks = topo_ranks;

  Cluster c;
  c.ranks = ranks;
  c.ranks_per_node = std::min(ranks, per_node);
  c.nodes = (ranks + c.ranks_per_node - 1) / c.ranks_per_node;

  c.intra = slowest_link(topo, /*intra=*/true);
  if (topo.intra_node_busbw_gbps() > 0) {
    if (c.intra.kind == topology::LINK_UNKNOWN) c.intra.kind = topology::LINK_SHM;
    c.intra.busbw_gbps = topo.intra_node_busbw_gbps();
    c.intra.from_busbw = true;
  }
  if (topo.intra_node_latency_us() > 0) c.intra.latency_us = topo.intra_node_latency_us();
  if (c.intra.busbw_gbps <= 0) {  // a node without described links: assume shared memory-ish
    c.intra.busbw_gbps = 10.0;
    c.intra.latency_us = default_latency_us(topology::LINK_UNKNOWN);
  }

  c.inter = slowest_link(topo, /*intra=*/false);
  if (topo.inter_node_busbw_gbps() > 0) {
    c.inter.kind = topology::LINK_NETWORK;
    c.inter.busbw_gbps = topo.inter_node_busbw_gbps();
    c.inter.from_busbw = true;
  }
  if (topo.inter_node_latency_us() > 0) c.inter.latency_us = topo.inter_node_latency_us();
  if (c.inter.busbw_gbps <= 0) {
    c.inter.kind = topology::LINK_NETWORK;
    c.inter.busbw_gbps = kDefaultInterNodeGbps;
    c.inter.latency_us = kDefaultInterNodeLatencyUs;
    c.inter_extrapolated = c.nodes > 1;
  }

  for (const auto& f : topo.collective_fits()) {
    int idx = -1;
    if (f.op() == "reduce_scatter") idx = int(Collective::kReduceScatter);
    if (f.op() == "all_gather") idx = int(Collective::kAllGather);
    if (idx < 0) continue;  // all_reduce is the Topology's own figures; unknown ops are ignored
    if (f.intra_node_busbw_gbps() > 0) {
      c.op_intra[idx] = c.intra;
      c.op_intra[idx].busbw_gbps = f.intra_node_busbw_gbps();
      c.op_intra[idx].latency_us = f.intra_node_latency_us();
      c.op_intra[idx].from_busbw = true;
    }
    if (f.inter_node_busbw_gbps() > 0 && !c.inter_extrapolated) {
      c.op_inter[idx] = c.inter;
      c.op_inter[idx].busbw_gbps = f.inter_node_busbw_gbps();
      c.op_inter[idx].latency_us = f.inter_node_latency_us();
      c.op_inter[idx].from_busbw = true;
    }
  }

  const auto& node0 = topo.nodes(0);
  c.has_gpus = node0.gpus_size() > 0;
  c.device_name = c.has_gpus ? node0.gpus(0).name() : "cpu";
  const DeviceSpec* spec = c.has_gpus ? find_device(c.device_name) : nullptr;
  c.device_known = !c.has_gpus || spec;
  c.mem_bw_gbps = !c.has_gpus ? kCpuMemBwGbps : spec ? spec->mem_bw_gbps : kUnknownGpuMemBwGbps;
  c.peak_bf16_tflops = !c.has_gpus ? kCpuTflops : spec ? spec->peak_bf16_tflops : kUnknownGpuTflops;
  if (c.has_gpus && node0.gpus(0).peak_bf16_tflops() > 0) c.peak_bf16_tflops = node0.gpus(0).peak_bf16_tflops();
  c.peak_fp8_tflops = spec ? spec->peak_fp8_tflops : 0;
  c.peak_int8_tops = spec ? spec->peak_int8_tops : 0;
  c.training_efficiency = spec ? spec->training_efficiency : 0;
  c.memory_bytes = c.has_gpus ? node0.gpus(0).memory_bytes() : 0;
  if (!c.has_gpus)  // the probe's CPU codec figures price CPU ranks' codec (GPU ranks run their own)
    for (const auto& m : topo.codec()) {
      const int idx = m.payload() == "bf16"   ? int(Payload::kBf16)
                      : m.payload() == "int8" ? int(Payload::kInt8)
                      : m.payload() == "fp8"  ? int(Payload::kFp8)
                                              : -1;
      if (idx < 0) continue;
      c.codec[idx].compress_gbps = m.compress_gbps();
      c.codec[idx].decompress_add_gbps = m.decompress_add_gbps();
    }

  // P2P: absent when any intra-node GPU pair is staged through the host; unverified when the
  // topology was probed (or loaded) without every pair passing the copy check. Presets describe
  // NVLink/PCIe P2P from the datasheet and count as verified.
  bool any_host = false, all_links_verified = true, any_gpu_link = false;
  for (const auto& l : topo.links()) {
    if (l.node_a() != l.node_b() || l.gpu_a() < 0 || l.gpu_b() < 0) continue;
    any_gpu_link = true;
    if (l.kind() == topology::LINK_HOST) any_host = true;
    if (!l.p2p_verified()) all_links_verified = false;
  }
  const bool verified = topo.p2p_all_verified() || (any_gpu_link && all_links_verified) || topo.source() == "preset";
  c.p2p_verified = c.has_gpus && any_gpu_link && !any_host && verified;
  return c;
}

const LinkClass& Cluster::intra_for(Collective c) const {
  const LinkClass& f = op_intra[int(c)];
  return f.busbw_gbps > 0 ? f : intra;
}

const LinkClass& Cluster::inter_for(Collective c) const {
  const LinkClass& f = op_inter[int(c)];
  return f.busbw_gbps > 0 ? f : inter;
}

CollectiveCost ring_cost(Collective c, int n, double bytes, const LinkClass& link) {
  TT_ASSERT(n >= 1 && bytes >= 0 && link.busbw_gbps > 0, "ring_cost: n ", n, " bytes ", bytes);
  if (n == 1) return {};
  const double steps = c == Collective::kAllReduce ? 2.0 * (n - 1) : double(n - 1);
  CollectiveCost cost;
  cost.latency_s = steps * link.latency_us * 1e-6;
  cost.transfer_s = steps / n * bytes / (link.busbw_gbps * 1e9);
  return cost;
}

CollectiveCost tree_all_reduce_cost(int n, double bytes, const LinkClass& link) {
  TT_ASSERT(n >= 1 && bytes >= 0 && link.busbw_gbps > 0, "tree_all_reduce_cost: n ", n, " bytes ", bytes);
  if (n == 1) return {};
  CollectiveCost cost;
  cost.latency_s = 2.0 * std::ceil(std::log2(double(n))) * link.latency_us * 1e-6;
  cost.transfer_s = 2.0 * bytes / (link.busbw_gbps * 1e9);
  return cost;
}

namespace {
LinkClass bottleneck(const Cluster& cl, Collective c) {
  const LinkClass& intra = cl.intra_for(c);
  const LinkClass& inter = cl.inter_for(c);
  if (cl.nodes <= 1) return intra;
  if (cl.ranks_per_node <= 1) return inter;
  LinkClass b = intra.busbw_gbps <= inter.busbw_gbps ? intra : inter;
  b.latency_us = std::max(intra.latency_us, inter.latency_us);
  return b;
}
CollectiveCost operator+(CollectiveCost a, const CollectiveCost& b) {
  a.latency_s += b.latency_s;
  a.transfer_s += b.transfer_s;
  return a;
}
}  // namespace

std::vector<CollectivePhase> collective_phases(Collective c, Algorithm a, double bytes, const Cluster& cl) {
  if (cl.ranks <= 1) return {};
  if (a == Algorithm::kTree) {
    TT_ASSERT(c == Collective::kAllReduce, "tree is an all-reduce algorithm only");
    return {{c, false, tree_all_reduce_cost(cl.ranks, bytes, bottleneck(cl, c))}};
  }
  if (a == Algorithm::kRing || cl.nodes <= 1 || cl.ranks_per_node <= 1)
    return {{c, false, ring_cost(c, cl.ranks, bytes, bottleneck(cl, c))}};
  // Hierarchical: g ranks per node, m nodes; the inter-node phase moves S per node in total. Each
  // phase is priced with its own collective's link figures (per-op fits, when present).
  const int g = cl.ranks_per_node, m = cl.nodes;
  constexpr Collective kRS = Collective::kReduceScatter, kAG = Collective::kAllGather, kAR = Collective::kAllReduce;
  const CollectivePhase rs_intra{kRS, false, ring_cost(kRS, g, bytes, cl.intra_for(kRS))};
  const CollectivePhase ag_intra{kAG, false, ring_cost(kAG, g, bytes, cl.intra_for(kAG))};
  switch (c) {
    case Collective::kAllReduce:
      return {rs_intra, {kAR, true, ring_cost(kAR, m, bytes, cl.inter_for(kAR))}, ag_intra};
    case Collective::kReduceScatter:
      return {rs_intra, {kRS, true, ring_cost(kRS, m, bytes, cl.inter_for(kRS))}};
    case Collective::kAllGather:
      return {{kAG, true, ring_cost(kAG, m, bytes, cl.inter_for(kAG))}, ag_intra};
  }
  return {};
}

CollectiveCost collective_cost(Collective c, Algorithm a, double bytes, const Cluster& cl) {
  CollectiveCost total;
  for (const CollectivePhase& p : collective_phases(c, a, bytes, cl)) total = total + p.cost;
  return total;
}

}  // namespace tt::cost
