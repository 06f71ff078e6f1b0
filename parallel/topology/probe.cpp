// The probe's assembly (see probe.h): node leaders look at their hardware, every rank exchanges the
// fragments and times all_reduce, and the pieces become one Topology.
#include "parallel/topology/probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "core/device_info.h"
#include "core/error.h"
#include "parallel/ddp/sharding.h"
#include "parallel/topology/codec_probe.h"
#include "parallel/topology/nvlink.h"
#include "parallel/topology/presets.h"
#include "parallel/topology/probe_cuda.h"
#include "parallel/topology/sysfs.h"
#include "parallel/topology/topology_io.h"

namespace tt::topology {

#if !TOPOTRAIN_HAVE_CUDA
CudaReport probe_cuda(int64_t, int) {
  CudaReport r;
  r.note = "built without CUDA: no GPUs probed";
  return r;
}
#endif

namespace {

using parallel::Communicator;

// Nominal small-message latencies used for GPU nodes, where the probe measures copy bandwidth but
// not collective latency: the presets' figures (presets.cpp).
constexpr double kNvlinkLatencyUs = 5;
constexpr double kPcieLatencyUs = 10;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "unknown-host";
  return buf;
}

const Link* find_link(const std::vector<Link>& links, int a, int b) {
  for (const Link& l : links)
    if (l.gpu_a() == a && l.gpu_b() == b) return &l;
  return nullptr;
}

// What the node leader gathers from its hardware (the impure half of node_fragment).
NodeProbe gather_node(const ProbeOptions& opts) {
  NodeProbe p;
  p.hostname = host_name();
  p.host = read_host_info(opts.sysfs_root);
  if (p.host.cpus <= 0) p.host.cpus = int(std::thread::hardware_concurrency());
  if (!opts.probe_gpus) return p;
  p.cuda = probe_cuda(opts.gpu_copy_bytes, opts.gpu_copy_iters);
  if (opts.use_nvml && p.cuda.devices.size() > 1) {
    std::vector<std::string> bus_ids;
    for (const CudaDeviceReport& d : p.cuda.devices) bus_ids.push_back(d.pci_bus_id);
    p.nvlinks = query_nvlinks(bus_ids);
  }
  return p;
}

// Every rank's fragment (empty string from ranks that sent none), exchanged with all_gather_v.
std::vector<std::string> exchange_fragments(Communicator& comm, const std::string& mine) {
  const int n = comm.size(), r = comm.rank();
  std::vector<int32_t> lengths(size_t(n), 0);
  lengths[size_t(r)] = int32_t(mine.size());
  comm.all_gather(&lengths[size_t(r)], lengths.data(), 1, DType::kI32)->wait();
  std::vector<int64_t> counts(lengths.begin(), lengths.end());
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::string all(size_t(total), '\0');
  comm.all_gather_v(mine.data(), all.data(), counts, DType::kI8)->wait();
  std::vector<std::string> out;
  int64_t offset = 0;
  for (int64_t c : counts) {
    out.push_back(all.substr(size_t(offset), size_t(c)));
    offset += c;
  }
  return out;
}

}  // namespace

std::vector<CollectiveMeasurement> measure_collectives(Communicator& comm, const ProbeOptions& opts) {
  std::vector<CollectiveMeasurement> out;
  const int n = comm.size();
  std::vector<std::string> ops = {"all_reduce"};
  for (const std::string& op : opts.ops)
    if (op == "reduce_scatter" || op == "all_gather") ops.push_back(op);
  for (const std::string& op : ops) {
    const bool all_reduce = op == "all_reduce";
    for (const int64_t bytes : opts.sizes) {
      const int64_t count = std::max<int64_t>(1, bytes / 4);  // the whole buffer, in f32 elements
      // The trainer's calls: reduce_scatter_v of gradient buckets and all_gather_v of the parameters,
      // with per-rank counts from the ZeRO shard layout (on MPI: one MPI_Ireduce / MPI_Ibcast per root).
      const std::vector<int64_t> counts = parallel::shard_sizes(count, n);
      std::vector<float> a(size_t(count), 0.0f), b(all_reduce ? 0 : size_t(count), 0.0f);
      const int64_t offset = parallel::shard_of(count, n, comm.rank()).begin;
      auto once = [&] {
        if (all_reduce)
          comm.all_reduce(a.data(), count, DType::kF32, parallel::ReduceOp::kSum)->wait();
        else if (op == "reduce_scatter")
          comm.reduce_scatter_v(a.data(), b.data(), counts, DType::kF32, parallel::ReduceOp::kAvg)->wait();
        else  // in place, as the trainer gathers its parameter shards
          comm.all_gather_v(b.data() + offset, b.data(), counts, DType::kF32)->wait();
      };
      for (int i = 0; i < opts.warmup; ++i) once();
      comm.barrier()->wait();
      const double t0 = now_s();
      for (int i = 0; i < opts.iters; ++i) once();
      float t = float((now_s() - t0) / opts.iters);
      comm.all_reduce(&t, 1, DType::kF32, parallel::ReduceOp::kMax)->wait();  // the slowest rank's mean
      CollectiveMeasurement m;
      m.set_op(op);
      m.set_call(all_reduce ? "all_reduce" : op + "_v");
      m.set_bytes(uint64_t(count) * 4);
      m.set_ranks(n);
      m.set_time_us(double(t) * 1e6);
      m.set_bus_bandwidth_gbps(t > 0 ? double(count) * 4 / t * bus_factor(op, n) / 1e9 : 0);
      m.set_backend(comm.backend());
      out.push_back(m);
    }
  }
  return out;
}

std::vector<CollectiveMeasurement> measure_intra_node(Communicator& comm, const ProbeOptions& opts) {
  const std::unique_ptr<Communicator> node = comm.split(comm.node(), comm.local_rank());
  ProbeOptions all_reduce_only = opts;
  all_reduce_only.ops = {};
  std::vector<CollectiveMeasurement> out = measure_collectives(*node, all_reduce_only);
  for (CollectiveMeasurement& m : out) {
    float t = float(m.time_us());
    comm.all_reduce(&t, 1, DType::kF32, parallel::ReduceOp::kMax)->wait();  // the slowest node
    m.set_time_us(double(t));
    m.set_bus_bandwidth_gbps(t > 0 ? double(m.bytes()) / (double(t) * 1e3) * bus_factor(m.op(), m.ranks()) : 0);
    m.set_scope("intra_node");
  }
  return out;
}

std::vector<CodecMeasurement> measure_codecs(Communicator& comm, const ProbeOptions& opts) {
  std::vector<CodecMeasurement> out;
  if (opts.codec_elements <= 0) return out;
  for (const parallel::GradCompression c :
       {parallel::GradCompression::kBf16, parallel::GradCompression::kInt8, parallel::GradCompression::kFp8}) {
    CodecMeasurement m = measure_codec(c, opts.codec_elements, std::max(1, opts.codec_iters));
    // The slowest rank: the largest time per byte, i.e. the smallest throughput.
    float inv[2] = {float(m.compress_gbps() > 0 ? 1.0 / m.compress_gbps() : 0.0),
                    float(m.decompress_add_gbps() > 0 ? 1.0 / m.decompress_add_gbps() : 0.0)};
    if (comm.size() > 1) comm.all_reduce(inv, 2, DType::kF32, parallel::ReduceOp::kMax)->wait();
    m.set_compress_gbps(inv[0] > 0 ? 1.0 / double(inv[0]) : 0.0);
    m.set_decompress_add_gbps(inv[1] > 0 ? 1.0 / double(inv[1]) : 0.0);
    out.push_back(m);
  }
  return out;
}

namespace {

// Busbw of a ring through GPUs 0..G-1 of `node`: its slowest hop; 0 with fewer than 2 GPUs.
double ring_bandwidth(const Topology& t, int node) {
  const int g = t.nodes(node).gpus_size();
  if (g < 2) return 0;
  double ring = -1;
  for (int i = 0; i < g; ++i) {
    const int a = std::min(i, (i + 1) % g), b = std::max(i, (i + 1) % g);
    double bw = 0;
    for (const Link& l : t.links())
      if (l.node_a() == node && l.node_b() == node && l.gpu_a() == a && l.gpu_b() == b) bw = l.bandwidth_gbps();
    ring = ring < 0 ? bw : std::min(ring, bw);
  }
  return std::max(ring, 0.0);
}

void validate(const ProbeOptions& opts) {
  if (opts.sizes.empty() || opts.iters < 1 || opts.warmup < 0 || opts.gpu_copy_iters < 1)
    throw Error(ErrorKind::kConfig, "probe needs at least one size, iters >= 1, warmup >= 0", "topotrain probe");
  for (int64_t s : opts.sizes)
    if (s < 4) throw Error(ErrorKind::kConfig, str("probe size ", s, " is below 4 bytes"), "topotrain probe --sizes");
}

}  // namespace

Topology node_fragment(const NodeProbe& probe, const std::string& sysfs_root) {
  Topology f;
  Node* node = f.add_nodes();
  node->set_hostname(probe.hostname);
  node->set_cpu_cores(probe.host.cpus);
  node->set_numa_nodes(probe.host.numa_nodes);
  const CudaReport& cuda = probe.cuda;
  if (!cuda.note.empty()) f.add_notes(cuda.note);
  std::vector<std::string> bus_ids;
  bool sysfs_missing = false;
  for (const CudaDeviceReport& d : cuda.devices) {
    Gpu* g = node->add_gpus();
    const std::string bus = normalize_pci_bus_id(d.pci_bus_id);
    bus_ids.push_back(bus.empty() ? d.pci_bus_id : bus);
    g->set_index(d.index);
    g->set_name(d.name);
    g->set_pci_bus_id(bus_ids.back());
    g->set_compute_capability(d.compute_capability);
    g->set_memory_bytes(d.memory_bytes);
    g->set_host_to_device_gbps(d.host_to_device_gbps);
    g->set_device_to_host_gbps(d.device_to_host_gbps);
    g->set_peak_bf16_tflops(tt::peak_bf16_tflops(d.name).value_or(0));
    // Read after the CUDA copies, so an idle-downtrained link has had traffic to train up.
    const PciDeviceInfo pci = read_pci_device(sysfs_root, d.pci_bus_id);
    sysfs_missing = sysfs_missing || !pci.found;
    g->set_numa_node(pci.numa_node);
    g->set_pcie_gen(pci.gen);
    g->set_pcie_width(pci.width);
    g->set_pcie_max_gen(pci.max_gen);
    g->set_pcie_max_width(pci.max_width);
    g->set_local_cpulist(pci.local_cpulist);
  }
  if (sysfs_missing) f.add_notes(str("no PCI information under ", sysfs_root, "/bus/pci/devices for some GPUs"));
  if (!probe.nvlinks.note.empty()) f.add_notes(probe.nvlinks.note);
  const std::vector<Link> nvlinks =
      cuda.devices.empty() ? std::vector<Link>{}
                           : interpret_nvlinks(bus_ids, probe.nvlinks.records,
                                               nvlink_gbps_per_link(cuda.devices[0].compute_capability), 0);
  int no_p2p = 0;
  for (const CudaPairReport& p : cuda.pairs) {
    const Link* nv = find_link(nvlinks, p.a, p.b);
    const bool verified = p.peer_access && p.content_ok;
    Link* l = f.add_links();
    l->set_kind(nv ? LINK_NVLINK : verified ? LINK_PCIE : LINK_HOST);
    l->set_node_a(0);
    l->set_gpu_a(p.a);
    l->set_node_b(0);
    l->set_gpu_b(p.b);
    l->set_bandwidth_gbps(p.gbps > 0 ? p.gbps : nv ? nv->bandwidth_gbps() : 0);
    l->set_measured(p.gbps > 0);
    l->set_p2p_verified(verified);
    if (!p.content_ok)
      f.add_notes(str("GPU ", p.a, " <-> GPU ", p.b, ": ", p.problem,
                      " — do not use P2P on this machine (NCCL_P2P_DISABLE=1)"));
    else if (!verified)
      ++no_p2p;
  }
  if (no_p2p > 0)
    f.add_notes(str("no P2P between ", no_p2p, " of ", cuda.pairs.size(),
                    " GPU pair(s): their copies are staged through host memory"));
  return f;
}

double all_reduce_bus_factor(int ranks) { return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0; }

double bus_factor(const std::string& op, int ranks) {
  if (op == "all_reduce") return all_reduce_bus_factor(ranks);
  if (op == "reduce_scatter" || op == "all_gather") return ranks > 1 ? double(ranks - 1) / ranks : 0.0;
  return 1.0;
}

AlphaBeta fit_collective(const std::vector<CollectiveMeasurement>& measurements, const std::string& op) {
  const CollectiveMeasurement* small = nullptr;
  const CollectiveMeasurement* large = nullptr;
  for (const CollectiveMeasurement& m : measurements) {
    if (m.op() != op) continue;
    if (!small || m.bytes() < small->bytes()) small = &m;
    if (!large || m.bytes() > large->bytes()) large = &m;
  }
  AlphaBeta ab;
  if (!large || large->bus_bandwidth_gbps() <= 0) return ab;
  ab.busbw_gbps = large->bus_bandwidth_gbps();
  const double bus_bytes = double(small->bytes()) * bus_factor(op, small->ranks());
  // The small size's time less its bandwidth term is the whole collective's latency; the cost model
  // charges alpha per ring step — 2(n-1) for all_reduce, n-1 for reduce_scatter / all_gather
  // (collective_cost.h) — so alpha is that share.
  const double steps = (op == "all_reduce" ? 2.0 : 1.0) * (small->ranks() - 1);
  ab.latency_us = std::max(0.0, small->time_us() - bus_bytes / (ab.busbw_gbps * 1e3)) / std::max(1.0, steps);
  return ab;
}

AlphaBeta fit_all_reduce(const std::vector<CollectiveMeasurement>& measurements) {
  return fit_collective(measurements, "all_reduce");
}

Topology assemble_topology(const std::vector<Topology>& node_fragments, const std::vector<int>& node_of_rank,
                           const std::vector<CollectiveMeasurement>& measurements,
                           const std::vector<CollectiveMeasurement>& intra_node) {
  const int num_nodes = int(node_fragments.size()), n = int(node_of_rank.size());
  if (num_nodes < 1) throw Error(ErrorKind::kInternal, "assemble_topology: no node fragments");
  Topology t;
  t.set_source("probe");
  for (int idx = 0; idx < num_nodes; ++idx) {
    const Topology& f = node_fragments[size_t(idx)];
    if (f.nodes_size() != 1)
      throw Error(ErrorKind::kInternal,
                  str("assemble_topology: fragment of node ", idx, " has ", f.nodes_size(), " nodes"));
    *t.add_nodes() = f.nodes(0);
    t.mutable_nodes(idx)->clear_ranks();
    for (Link l : f.links()) {
      l.set_node_a(idx);
      l.set_node_b(idx);
      *t.add_links() = l;
    }
    for (const std::string& note : f.notes()) t.add_notes(f.nodes(0).hostname() + ": " + note);
  }
  for (int r = 0; r < n; ++r) {
    const int idx = node_of_rank[size_t(r)];
    if (idx < 0 || idx >= num_nodes)
      throw Error(ErrorKind::kInternal, str("assemble_topology: rank ", r, " is on node ", idx, " of ", num_nodes));
    t.mutable_nodes(idx)->add_ranks(r);
  }
  t.set_name(num_nodes > 1 ? str("probed on ", t.nodes(0).hostname(), " and ", num_nodes - 1, " more node(s)")
                           : str("probed on ", t.nodes(0).hostname()));

  int gpus = t.nodes(0).gpus_size(), ranks = t.nodes(0).ranks_size();
  bool uniform = true;
  for (const Node& node : t.nodes()) {
    uniform = uniform && node.gpus_size() == gpus && node.ranks_size() == ranks;
    gpus = std::min(gpus, node.gpus_size());
    ranks = std::min(ranks, node.ranks_size());
  }
  if (!uniform) t.add_notes("nodes differ in GPU or rank count: gpus_per_node/ranks_per_node are the minimum");
  t.set_gpus_per_node(gpus);
  t.set_ranks_per_node(ranks);

  for (const CollectiveMeasurement& m : measurements) *t.add_measurements() = m;
  for (const CollectiveMeasurement& m : intra_node) *t.add_measurements() = m;
  const AlphaBeta fit = fit_all_reduce(measurements);
  const AlphaBeta intra_fit = fit_all_reduce(intra_node);  // zero when not measured
  if (num_nodes > 1) {
    t.set_inter_node_busbw_gbps(fit.busbw_gbps);
    t.set_inter_node_latency_us(fit.latency_us);
  } else if (gpus == 0) {
    t.set_intra_node_busbw_gbps(fit.busbw_gbps);
    t.set_intra_node_latency_us(fit.latency_us);
  }
  if (num_nodes > 1 || gpus == 0) {  // the world measurements describe this link class
    for (const char* op : {"reduce_scatter", "all_gather"}) {
      const AlphaBeta f = fit_collective(measurements, op);
      if (f.busbw_gbps <= 0) continue;
      CollectiveFit* cf = t.add_collective_fits();
      cf->set_op(op);
      if (num_nodes > 1) {
        cf->set_inter_node_busbw_gbps(f.busbw_gbps);
        cf->set_inter_node_latency_us(f.latency_us);
      } else {
        cf->set_intra_node_busbw_gbps(f.busbw_gbps);
        cf->set_intra_node_latency_us(f.latency_us);
      }
    }
  }

  if (gpus > 0) {
    double ring = -1;
    bool verified = true, nvlink = true;
    for (int i = 0; i < num_nodes; ++i)
      if (t.nodes(i).gpus_size() >= 2) ring = ring < 0 ? ring_bandwidth(t, i) : std::min(ring, ring_bandwidth(t, i));
    for (const Link& l : t.links()) {
      if (l.gpu_a() < 0) continue;
      verified = verified && l.p2p_verified();
      nvlink = nvlink && l.kind() == LINK_NVLINK;
    }
    t.set_p2p_all_verified(verified);
    if (ring > 0) {
      t.set_intra_node_busbw_gbps(ring);
      t.set_intra_node_latency_us(nvlink ? kNvlinkLatencyUs : kPcieLatencyUs);
      t.add_notes("intra-node busbw estimated from the slowest GPU copy of the ring 0..G-1; latency nominal");
    }
    if (n > 1 && !measurements.empty())
      t.add_notes(str("all_reduce measurements are of the ", measurements[0].backend(),
                      " communicator on host memory, not of GPU buffers"));
  } else {
    for (int i = 0; i < num_nodes; ++i) {
      if (t.nodes(i).ranks_size() < 2) continue;
      Link* l = t.add_links();
      l->set_kind(LINK_SHM);
      l->set_node_a(i);
      l->set_gpu_a(-1);
      l->set_node_b(i);
      l->set_gpu_b(-1);
      const AlphaBeta& shm = num_nodes == 1 ? fit : intra_fit;
      if (shm.busbw_gbps > 0) {
        l->set_bandwidth_gbps(shm.busbw_gbps);
        l->set_latency_us(shm.latency_us);
        l->set_measured(true);
      }
    }
    if (num_nodes > 1 && intra_fit.busbw_gbps > 0) {
      t.set_intra_node_busbw_gbps(intra_fit.busbw_gbps);
      t.set_intra_node_latency_us(intra_fit.latency_us);
    } else if (num_nodes > 1) {
      t.add_notes("intra-node (shared memory) bandwidth not measured: the world all-reduce crosses the network");
    }
  }
  add_network_links(t, num_nodes, fit.busbw_gbps, fit.latency_us, fit.busbw_gbps > 0);
  return t;
}

Topology probe_topology(Communicator& comm, const ProbeOptions& opts) {
  validate(opts);
  const int n = comm.size();
  std::string mine;
  if (comm.local_rank() == 0) node_fragment(gather_node(opts), opts.sysfs_root).SerializeToString(&mine);

  std::vector<int32_t> node_of(size_t(n), 0);
  node_of[size_t(comm.rank())] = comm.node();
  comm.all_gather(&node_of[size_t(comm.rank())], node_of.data(), 1, DType::kI32)->wait();
  const std::vector<std::string> fragments = exchange_fragments(comm, mine);
  std::vector<Topology> by_node(size_t(comm.num_nodes()));
  for (int r = 0; r < n; ++r) {
    if (fragments[size_t(r)].empty()) continue;
    const int idx = node_of[size_t(r)];
    TT_ASSERT(idx >= 0 && idx < comm.num_nodes(), "rank ", r, " reports node ", idx, " of ", comm.num_nodes());
    TT_ASSERT(by_node[size_t(idx)].ParseFromString(fragments[size_t(r)]), "bad probe fragment from rank ", r);
  }
  const std::vector<CollectiveMeasurement> measurements = measure_collectives(comm, opts);
  // CPU ranks on several nodes: the world all-reduce crosses the network, so time the nodes' own
  // links on a node sub-communicator (the same decision on every rank: from the gathered layout).
  std::vector<CollectiveMeasurement> intra;
  std::vector<int> per_node(size_t(comm.num_nodes()), 0);
  for (int32_t node : node_of) ++per_node[size_t(node)];
  const bool uniform = std::all_of(per_node.begin(), per_node.end(), [&](int k) { return k == per_node[0]; });
  bool any_gpu = false;
  for (const Topology& f : by_node) any_gpu = any_gpu || (f.nodes_size() > 0 && f.nodes(0).gpus_size() > 0);
  std::string intra_note;
  if (comm.num_nodes() > 1 && uniform && per_node[0] > 1 && !any_gpu) {
    try {
      intra = measure_intra_node(comm, opts);
    } catch (const Error& e) {  // a backend without split(): the same on every rank
      intra_note = str("intra-node all-reduce not timed: ", e.what());
    }
  }
  Topology t = assemble_topology(by_node, std::vector<int>(node_of.begin(), node_of.end()), measurements, intra);
  if (!intra_note.empty()) t.add_notes(intra_note);
  // The CPU codec prices CPU ranks only (the same decision on every rank: t is identical everywhere).
  if (t.gpus_per_node() == 0)
    for (const CodecMeasurement& m : measure_codecs(comm, opts)) *t.add_codec() = m;
  return t;
}

}  // namespace tt::topology
