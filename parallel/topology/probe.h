// The topology probe: what this job runs on, as a Topology message — nodes and their ranks, GPUs
// (CUDA runtime), PCIe links and NUMA placement (sysfs), NVLink (NVML), P2P verified by real copies,
// and the all-reduce bandwidth measured through the job's Communicator.
//
// Design: one leader per node (local rank 0) probes the node's hardware, the fragments are
// exchanged with all_gather_v so every rank ends up with the same Topology, and then all ranks time
// all_reduce at a few sizes (CollectiveMeasurement, nccl-tests busbw). Decisions are left to the
// cost model and the planner; the probe only reports. Every hardware source is optional: a machine
// without GPUs, driver, NVML or sysfs yields a topology of CPU ranks (LINK_SHM within a node,
// LINK_NETWORK between nodes) with notes saying what was not available.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/topology/nvlink.h"
#include "parallel/topology/probe_cuda.h"
#include "parallel/topology/sysfs.h"
#include "parallel/topology/topology.pb.h"

namespace tt::topology {

struct ProbeOptions {
  std::vector<int64_t> sizes = {int64_t(64) << 10, int64_t(1) << 20, int64_t(16) << 20};  // all_reduce bytes
  // Collectives timed at every size; all_reduce is always measured (it calibrates the Topology's
  // busbw/latency), reduce_scatter / all_gather add a CollectiveFit each (topology.proto).
  std::vector<std::string> ops = {"all_reduce", "reduce_scatter", "all_gather"};
  int iters = 5;                               // timed iterations per size and op (>= 1)
  int warmup = 1;                              // untimed iterations per size
  bool probe_gpus = true;                      // CUDA devices (ignored in a build without CUDA: no GPUs)
  bool use_nvml = true;                        // NVLink through NVML when GPUs were found
  int64_t gpu_copy_bytes = int64_t(64) << 20;  // per P2P / host<->device copy
  int gpu_copy_iters = 5;
  std::string sysfs_root = "/sys";
  int64_t codec_elements = int64_t(1) << 22;  // CPU codec timing buffer (0 = do not time the codec)
  int codec_iters = 3;
};

// Collective: every rank of `comm` must call it, with equal options; every rank returns the same
// Topology (source "probe"). Measurements are of opts.ops over f32 buffers of opts.sizes on all
// ranks together (bytes = the whole buffer: reduce_scatter's send, all_gather's receive buffer),
// through the calls the trainer issues (measure_collectives); without GPUs the CPU gradient codec
// is timed too (Topology.codec, measure_codecs); reduce_scatter / all_gather are fitted like all_reduce
// into Topology.collective_fits (inter-node figures with several nodes, intra-node for CPU ranks
// on one node, none for GPU nodes, whose intra figure comes from the GPU links); with several nodes the world
// all-reduce is bounded by the network and is reported as the inter-node figure, and the intra-node busbw then comes
// from the GPU links, or for CPU ranks from an all-reduce timed on each node's sub-communicator (measure_intra_node;
// when the nodes hold equal rank counts > 1 and the backend can split). Throws
// tt::Error on a CUDA failure (on a node leader only: its peers then wait for the collective timeout unless the caller
// ends the job, as launch/'s run_on_all_ranks does) or a collective timeout.
Topology probe_topology(parallel::Communicator& comm, const ProbeOptions& opts = {});

// ---- The steps of probe_topology, exposed so GPU and multi-node cases are tested on data ----

// Collective: times opts.ops at opts.sizes through the calls the trainer issues for them:
// all_reduce (sum), reduce_scatter_v (avg; GradReducer's ZeRO buckets) and all_gather_v (in place;
// the ZeRO parameter gather), the _v counts being the ZeRO shard sizes of the buffer
// (parallel/ddp/sharding). Each entry's `call` names the call; time is the slowest rank's mean.
std::vector<CollectiveMeasurement> measure_collectives(parallel::Communicator& comm, const ProbeOptions& opts);
// Collective: all_reduce at opts.sizes within every node, on a node sub-communicator (split), the
// slowest rank's mean over all nodes; scope "intra_node". Every node must hold as many ranks.
std::vector<CollectiveMeasurement> measure_intra_node(parallel::Communicator& comm, const ProbeOptions& opts);
// Collective: measure_codec() for bf16 and int8 on every rank at once, the slowest rank's figures;
// empty when opts.codec_elements is 0.
std::vector<CodecMeasurement> measure_codecs(parallel::Communicator& comm, const ProbeOptions& opts);

// What a node leader gathered from its hardware.
struct NodeProbe {
  std::string hostname;
  HostInfo host;
  CudaReport cuda;
  NvLinkQuery nvlinks;  // records index cuda.devices
};

// One node's fragment: a Topology with nodes[0] (GPUs with PCIe/NUMA details read from
// <sysfs_root>/bus/pci/devices), its GPU-GPU links (node index 0) and notes. A pair is LINK_NVLINK
// when NVML shows NVLink between it, else LINK_PCIE when P2P was enabled and every copy arrived
// intact, else LINK_HOST; bandwidth is the measured copy bandwidth (nominal NVLink width when not
// measured); p2p_verified = peer access && content intact. A corrupted copy adds a note naming the
// pair.
Topology node_fragment(const NodeProbe& probe, const std::string& sysfs_root);

// The job's Topology from one fragment per node (by node index), the node of every world rank, and
// the all_reduce measurements over all ranks (see probe_topology for how the figures are derived).
// Throws tt::Error(kInternal) when the inputs disagree (a rank on a node without a fragment).
// intra_node: all_reduce timed within each node (scope "intra_node"; CPU ranks on several nodes):
// fitted into the intra-node figures and the nodes' shared-memory links.
Topology assemble_topology(const std::vector<Topology>& node_fragments, const std::vector<int>& node_of_rank,
                           const std::vector<CollectiveMeasurement>& measurements,
                           const std::vector<CollectiveMeasurement>& intra_node = {});

// nccl-tests bus bandwidth factor of all_reduce over n ranks: 2(n-1)/n (0 for one rank).
double all_reduce_bus_factor(int ranks);
// The same for any op name: all_reduce 2(n-1)/n, reduce_scatter / all_gather (n-1)/n, else 1.
double bus_factor(const std::string& op, int ranks);

struct AlphaBeta {
  double latency_us = 0;  // alpha
  double busbw_gbps = 0;  // beta; 0 when nothing was measured (one rank)
};
// Two-point fit of t(S) = 2(n-1)·alpha + S * factor / beta over the "all_reduce" entries (the ring
// all-reduce of collective_cost.h): beta is the busbw of the largest size, alpha the time of the
// smallest size less its bandwidth term (>= 0), per ring step.
AlphaBeta fit_all_reduce(const std::vector<CollectiveMeasurement>& measurements);
// The same two-point fit over the entries of `op`, with that op's ring: reduce_scatter / all_gather
// t(S) = (n-1)·alpha + S (n-1)/n / beta (collective_cost.h). Zero fit when `op` was not measured.
AlphaBeta fit_collective(const std::vector<CollectiveMeasurement>& measurements, const std::string& op);

}  // namespace tt::topology
