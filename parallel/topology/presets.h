// Named topologies with public figures, so the cost model, the planner and the simulator can be
// run (and tested) for machines this process is not on: `8x4090-pcie`, `8xh100-sxm`,
// `2x8xa100-sxm-100g-ib`, ...
//
// Design: a preset is built from three small tables (GPU model, intra-node interconnect, network)
// instead of being written out per name, so every combination stays consistent and each figure is
// stated once, next to where it comes from (DESIGN.md "Facts to build on", or a datasheet).
//
// Naming scheme:
//   <G>x<gpu>-<bus>              one node with G GPUs                e.g. 8x4090-pcie, 8xh100-sxm
//   <N>x<node preset>-<network>  N identical nodes on one network    e.g. 2x8xh100-sxm-4x200g-ib
// networks: 1gbe, 100gbe, 100g-ib, 400g-ib, 4x200g-ib (see kNetworks in presets.cpp).
// preset_names() lists the single-node presets and their two-node variants on every network;
// preset_topology() also accepts N = 2..64 nodes for scaling experiments.
#pragma once

#include <string>
#include <vector>

#include "parallel/topology/topology.pb.h"

namespace tt::topology {

// Every name preset_topology() accepts with N <= 2, in a stable order (single-node presets first).
std::vector<std::string> preset_names();

// The topology called `name` (source "preset"; no measurements; Node.ranks empty). Links are
// undirected and listed once: GPU pairs (i < j) within each node, then one LINK_NETWORK link per
// node pair with gpu_a = gpu_b = -1. Throws tt::Error(kConfig) naming the bad name and listing the
// valid ones.
Topology preset_topology(const std::string& name);

}  // namespace tt::topology
