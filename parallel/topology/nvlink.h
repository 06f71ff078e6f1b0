// NVLink discovery: which GPU pairs NVLink connects, directly or through NVSwitches, and how wide.
//
// Design: two halves. query_nvlinks() asks NVML, loaded at run time with dlopen("libnvidia-ml.so.1")
// so the build has no NVML dependency and a machine without the driver simply has no NVLink
// information; it returns raw per-link records. interpret_nvlinks() turns records into Links and is
// a pure function, tested on recorded records (tests/fixtures/topology/nvml-*.txt, the format of
// format_nvlink_records) for NVSwitch systems, bridged pairs and GPUs without NVLink.
#pragma once

#include <string>
#include <vector>

#include "parallel/topology/topology.pb.h"

namespace tt::topology {

// One NVLink of one local GPU, as NVML reports it.
struct NvLinkRecord {
  int gpu = 0;                // index into the GPU bus id list
  int link = 0;               // NVLink index on that GPU (0..17)
  std::string remote_bus_id;  // the peer's PCI address (a GPU, or an NVSwitch); "" when inactive
  bool active = false;
};

struct NvLinkQuery {
  bool available = false;  // NVML loaded and initialised
  std::string note;        // why not, or what failed ("" when all went well)
  std::vector<NvLinkRecord> records;
};

// Queries links 0..17 of each GPU given by PCI bus id (any form normalize_pci_bus_id accepts).
// Never throws: a missing library, symbol or a failing call ends up in `note`. Thread-compatible
// (NVML is initialised and shut down inside the call).
NvLinkQuery query_nvlinks(const std::vector<std::string>& gpu_bus_ids);

// Per-direction bandwidth of one NVLink for a GPU generation: 25 GB/s for NVLink 2-4 (V100, A100,
// H100: 12 links x 25 = 300, 18 x 25 = 450), 50 for NVLink 5 (sm_100), 14.0625 for the GA102 bridge
// (sm_86: 4 links = 56.25 GB/s per direction).
double nvlink_gbps_per_link(int compute_capability);

// NVLink Links between the GPUs of node `node` (gpu_a < gpu_b), from active records:
//  - a link whose remote bus id is another listed GPU connects that pair directly;
//  - any other remote (an NVSwitch) puts the GPU on the switch fabric; two GPUs on the fabric are
//    connected with min(their switch links) links.
// A pair's width is min(links seen from a, links seen from b) for direct links (a link counts only
// when both ends report it) plus its fabric links; bandwidth = width * gbps_per_link, nominal
// (measured = false, p2p_verified = false: the CUDA copy check sets that).
std::vector<Link> interpret_nvlinks(const std::vector<std::string>& gpu_bus_ids,
                                    const std::vector<NvLinkRecord>& records, double gbps_per_link, int node);

// Text form of a query, one line each, for recording fixtures and for --verbose output:
//   gpu <index> <bus id>
//   nvlink <gpu> <link> <remote bus id | -> <active | inactive>
// '#' starts a comment. parse_nvlink_records reads it back; a malformed line is tt::Error(kData)
// naming `where` and the line number.
std::string format_nvlink_records(const std::vector<std::string>& gpu_bus_ids,
                                  const std::vector<NvLinkRecord>& records);
void parse_nvlink_records(const std::string& text, const std::string& where, std::vector<std::string>* gpu_bus_ids,
                          std::vector<NvLinkRecord>* records);

}  // namespace tt::topology
