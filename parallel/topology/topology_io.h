// Topology files and the human-readable description: protobuf text format (what `topotrain probe
// --dump` writes and what users edit) and JSON (for scripts), plus describe_topology's table.
//
// Design: the file format is the protobuf message itself, so a probed machine, a preset and a
// hand-written what-if all load the same way; loading validates the cross-references (link
// endpoints) that protobuf cannot, so later stages can index without checks.
#pragma once

#include <string>

#include "parallel/topology/topology.pb.h"

namespace tt::topology {

std::string topology_to_text(const Topology& t);
// JSON with the .proto field names (snake_case), every field printed (defaults included), indented.
std::string topology_to_json(const Topology& t);

// Parse + validate_topology. Errors are tt::Error(kConfig) naming `where` (a file name or
// "--topology") with the parser's line/column and a hint.
Topology topology_from_text(const std::string& text, const std::string& where);
Topology topology_from_json(const std::string& json, const std::string& where);

// Link endpoints name existing nodes and GPUs (gpu -1 = the node as a whole), bandwidths and
// latencies are finite and >= 0, counts >= 0. Throws tt::Error(kConfig) naming `where` and the field.
void validate_topology(const Topology& t, const std::string& where);

// Writes `path` atomically: JSON when it ends in ".json", text format otherwise. Throws
// tt::Error(kRuntime) naming the path on I/O failure.
void save_topology(const std::string& path, const Topology& t);
// Reads a file written by save_topology (or by hand): JSON when its first non-blank character is
// '{', text format otherwise. The result's source is "file:<path>". Throws tt::Error(kConfig)
// naming the path when it is missing, unparsable or invalid.
Topology load_topology(const std::string& path);

// Multi-line table: nodes, GPUs (memory, PCIe, NUMA, host bandwidth), the GPU link matrix, the
// network, busbw/latency figures, measurements, and NCCL-relevant hints (e.g. "P2P unavailable or
// unverified: NCCL_P2P_DISABLE=1 recommended"). Nodes identical to the one before are summarised.
std::string describe_topology(const Topology& t);

// Adds one LINK_NETWORK link between every pair of nodes [0, num_nodes) (whole-node endpoints).
void add_network_links(Topology& t, int num_nodes, double bandwidth_gbps, double latency_us, bool measured);

}  // namespace tt::topology
