// Alpha-beta cost model of the collectives data parallelism issues: time = latency terms (α per
// algorithm step) + bytes / bandwidth, per collective (all_reduce, reduce_scatter, all_gather) and
// algorithm (ring, tree, hierarchical), over a Cluster distilled from a Topology. Pure functions.
//
// Design decisions (each one a simplification, stated so a reader can judge the numbers):
//  * Bandwidth is "bus bandwidth" B in the nccl-tests sense, which already folds in the ring's
//    traffic factor, so the ring formulas use it directly:
//        all_reduce      2(n-1)/n · S / B  +  2(n-1)·α        (S = payload bytes per rank)
//        reduce_scatter   (n-1)/n · S / B  +   (n-1)·α        (S = the full, unscattered buffer)
//        all_gather       (n-1)/n · S / B  +   (n-1)·α        (S = the full, gathered buffer)
//    nccl-tests reports algbw = S / time, so algbw = busbw · n / (2(n-1)) for all-reduce and
//    busbw · n / (n-1) for reduce-scatter / all-gather; a measured Topology.*_busbw_gbps plugs in
//    as B unchanged.
//  * Tree (NCCL's pipelined double binary tree, all_reduce only — NCCL has no tree reduce-scatter or
//    all-gather): 2·log2(n)·α latency (up the tree, then down) and 2·S / B bandwidth (every byte is
//    reduced up and broadcast down; the two trees split the data and use both link directions, so
//    pipelining leaves ~2 S/B). Slightly worse than ring in bandwidth, much better in latency: it
//    wins for small buckets and many ranks, as in NCCL's tuner.
//  * A flat collective over several nodes runs at the slowest link class (min bandwidth, max
//    latency): a ring crosses the network at every node boundary, and each node has one outgoing
//    network edge per ring, so the network bandwidth is the node's aggregate (Topology
//    inter_node_busbw_gbps, or the LINK_NETWORK link's bandwidth).
//  * Hierarchical (m nodes × g ranks): intra-node reduce-scatter over g → inter-node all-reduce of
//    each rank's 1/g slice, the g slices of a node sharing its network (so the node sends
//    2(m-1)/m · S in total) → intra-node all-gather. reduce_scatter / all_gather decompose the same
//    way with one intra and one inter phase.
//  * Without measured busbw, nominal link figures are used as B (an optimistic upper bound): the
//    slowest GPU-GPU link of a node, the slowest network link between nodes.
//  * Per-collective calibration: reduce_scatter / all_gather are derived from the all-reduce figures
//    (the same B and α) unless the Topology carries a CollectiveFit for them (the probe measures
//    them: on MPI over TCP they ran 2-3x slower than the all-reduce busbw predicts, docs/
//    ground_truth.md); then that op's B and α replace the link class's for that collective, flat or
//    as a hierarchical phase. Presets have no fits and price every collective from all_reduce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/topology/topology.pb.h"

namespace tt::cost {

enum class Collective { kAllReduce, kReduceScatter, kAllGather };
enum class Algorithm { kRing, kTree, kHierarchical };
enum class Payload { kFp32, kBf16, kInt8, kFp8 };  // kFp8: E5M2 codes, block scales, error feedback

const char* collective_name(Collective c);  // "all_reduce", "reduce_scatter", "all_gather"
const char* algorithm_name(Algorithm a);    // "ring", "tree", "hierarchical"
const char* payload_name(Payload p);        // "fp32", "bf16", "int8+ef", "fp8+ef"

// int8 and fp8 payloads carry one fp32 absmax scale per block of kInt8BlockElems elements.
constexpr int kInt8BlockElems = 256;
// Wire bytes per gradient element: 4, 2, 1 + 4/256 = 1.015625.
double payload_bytes_per_elem(Payload p);
// Device-memory bytes touched per element by compressing before and decompressing after the
// collective (0 for fp32): bf16 reads 4 writes 2, then reads 2 writes 4 (12); int8 the same with
// 1.0156 B plus the error-feedback residual read and written (8) ≈ 18.03.
double codec_bytes_per_elem(Payload p);
// The quantize/dequantize passes as a memory-bound kernel: elems · codec_bytes_per_elem / mem_bw.
double codec_time_s(Payload p, int64_t elems, double mem_bw_gbps);

// Measured codec throughput (Topology.codec), in fp32 gradient GB/s; 0 = not measured.
struct CodecFigures {
  double compress_gbps = 0;        // compress_with_feedback
  double decompress_add_gbps = 0;  // decompress_add
  bool measured() const { return compress_gbps > 0 && decompress_add_gbps > 0; }
};

// One link class as the model sees it.
struct LinkClass {
  double busbw_gbps = 0;  // B: bus bandwidth, GB/s (1e9 B/s)
  double latency_us = 0;  // α: per algorithm step
  topology::LinkKind kind = topology::LINK_UNKNOWN;
  bool from_busbw = false;       // B from Topology.*_busbw_gbps (figures seen in practice), not nominal link bandwidth
  std::string describe() const;  // "NVLink 450 GB/s busbw", "1 GbE (0.12 GB/s)"
};

// The data-parallel group the model prices: `ranks` ranks, ranks_per_node per node.
struct Cluster {
  int ranks = 1, ranks_per_node = 1, nodes = 1;
  LinkClass intra, inter;           // inter is meaningful only when nodes > 1
  bool inter_extrapolated = false;  // nodes beyond the Topology's, joined by kDefaultInterNode
  bool has_gpus = false;
  bool p2p_verified = false;  // every intra-node GPU pair has verified P2P (no LINK_HOST, nothing unverified)
  std::string device_name;    // GPU name of node 0, or "cpu"
  // The device's figures (core/device_info.h's table; CPU ranks: kCpuMemBwGbps, kCpuTflops; a GPU
  // missing from the table: kUnknownGpu*, device_known false, no fp8/int8, default efficiency).
  bool device_known = false;
  double mem_bw_gbps = 0;
  double peak_bf16_tflops = 0;
  double peak_fp8_tflops = 0;      // 0: no fp8 tensor cores
  double peak_int8_tops = 0;       // 0: no int8 tensor cores (or unknown)
  double training_efficiency = 0;  // achieved fraction of the bf16 peak; 0 = unknown (the planner's default)
  uint64_t memory_bytes = 0;  // per device; 0 = unknown
  // Per-collective overrides from Topology.collective_fits, indexed by Collective; a LinkClass with
  // busbw_gbps 0 = none (use intra / inter). all_reduce's stays empty: intra / inter are its fit.
  LinkClass op_intra[3], op_inter[3];
  const LinkClass& intra_for(Collective c) const;  // op_intra[c] when fitted, else intra
  const LinkClass& inter_for(Collective c) const;
  // Measured CPU codec per Payload (from Topology.codec, for clusters without GPUs; fp32 stays 0).
  CodecFigures codec[4];
};

// One compress + one decompress-add of elems gradient elements on the cluster: from the measured
// throughput when cluster.codec has it for p, else codec_time_s(p, elems, cluster.mem_bw_gbps).
// 0 for fp32.
double codec_time_s(Payload p, int64_t elems, const Cluster& cluster);
// One decompress-add of elems (the owner's reduction of received copies): measured, else reading
// the payload and the fp32 accumulator and writing it back ((wire + 8) bytes per element).
double decompress_add_time_s(Payload p, int64_t elems, const Cluster& cluster);

// A CPU rank (~20 GB/s, 1 TFLOP/s; the trainer measures its sgemm speed instead when it runs) and a
// GPU the device table does not know (conservative).
constexpr double kCpuMemBwGbps = 20, kCpuTflops = 1.0;
constexpr double kUnknownGpuMemBwGbps = 1000, kUnknownGpuTflops = 100;

// Used between nodes when a single-node Topology is extrapolated to several nodes: 100 Gb/s
// Ethernet/RoCE (12.5 GB/s line rate per node), busbw 90% of it as in the network presets, 10 us.
constexpr double kDefaultInterNodeLineGbps = 12.5;
constexpr double kDefaultInterNodeGbps = 0.9 * kDefaultInterNodeLineGbps;
constexpr double kDefaultInterNodeLatencyUs = 10.0;

// Distils a Topology into a Cluster of `ranks` ranks (0 = all of it). Fewer ranks than the
// Topology holds take whole nodes first; more replicate its nodes (ranks_per_node each) joined by
// its network link class, or by the kDefaultInterNode* figures when it has none. Throws
// tt::Error(kConfig) for a Topology without nodes or ranks.
Cluster cluster_of(const topology::Topology& topo, int ranks = 0);

struct CollectiveCost {
  double latency_s = 0, transfer_s = 0;
  double total_s() const { return latency_s + transfer_s; }
};

// Ring / tree primitives on one link class (n ranks, bytes as defined above). Tree is all-reduce
// only: asking for a tree reduce-scatter/all-gather is a TT_ASSERT failure.
CollectiveCost ring_cost(Collective c, int n, double bytes, const LinkClass& link);
CollectiveCost tree_all_reduce_cost(int n, double bytes, const LinkClass& link);

// The collective over the whole cluster. kRing/kTree are flat (slowest link class);
// kHierarchical on one node (or one rank per node) equals the flat ring. bytes: per rank, as above.
CollectiveCost collective_cost(Collective c, Algorithm a, double bytes, const Cluster& cluster);

// collective_cost's parts in the order they run: one phase for a flat collective; for a
// hierarchical one over several nodes, the intra-node reduce-scatter, the inter-node collective and
// the intra-node all-gather that it has (all_reduce: all three). Their sum is collective_cost.
struct CollectivePhase {
  Collective collective = Collective::kAllReduce;
  bool inter_node = false;  // false: within a node, or flat over the cluster
  CollectiveCost cost;
};
std::vector<CollectivePhase> collective_phases(Collective c, Algorithm a, double bytes, const Cluster& cluster);

}  // namespace tt::cost
