// `topotrain probe`: what the job runs on, as a Topology — probed (works under mpirun: every rank
// takes part, rank 0 prints), or loaded from a file or a preset instead. Prints the description
// table or JSON; --dump writes the protobuf text format (JSON for a .json name) atomically.
#include <cstdio>
#include <sstream>

#include "core/allocator.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "launch/args.h"
#include "launch/commands.h"
#include "launch/train/process_group.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/rank_discovery.h"
#include "parallel/topology/presets.h"
#include "parallel/topology/probe.h"
#include "parallel/topology/topology_io.h"

namespace tt {

namespace {

// "64K,1M,16M" -> bytes (binary suffixes K, M, G; optional trailing B).
std::vector<int64_t> parse_probe_sizes(const std::string& spec) {
  const int64_t most = int64_t(host_memory_available().available_bytes / 4);  // send, receive, scratch
  std::vector<int64_t> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    out.push_back(parse_byte_size(
        item, "topotrain probe --sizes",
        str("use e.g. 64K,1M,16M; a size needs about 3x its bytes, so at most ", format_bytes(double(most)), " here"),
        4, most));
  }
  if (out.empty()) throw Error(ErrorKind::kUsage, "no sizes in '" + spec + "'", "topotrain probe --sizes");
  return out;
}

void print_topology(const topology::Topology& t, bool json) {
  std::fputs((json ? topology::topology_to_json(t) + "\n" : topology::describe_topology(t)).c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

int probe_main(const Args& args) {
  ArgParser p("topotrain probe",
              "Probe this job's interconnect (GPUs, P2P verified by real copies, PCIe/NUMA, NVLink, all-reduce "
              "bandwidth through the communicator; run under mpirun for several ranks), or show a topology file "
              "or preset. Rank 0 prints.");
  p.flag("--json", "print the topology as JSON instead of the table")
      .option("--dump", "FILE", "also write the topology to FILE (text format; JSON if FILE ends in .json)")
      .option("--topology", "FILE", "load this topology file instead of probing")
      .option("--preset", "NAME", "use a preset instead of probing (see --list-presets)")
      .flag("--list-presets", "list the preset names and exit")
      .option("--sizes", "LIST", "all_reduce buffer sizes in bytes (K/M/G binary)", "64K,1M,16M")
      .option("--iters", "N", "timed all_reduce iterations per size", "5")
      .flag("--no-gpu", "do not probe GPUs (CPU ranks only)")
      .option("--timeout", "S", "collective timeout in seconds", "300")
      .option("--ranks-per-node", "N",
              "pretend consecutive ranks form nodes of N ranks (as parallel.ranks_per_node; 0 = the hosts)", "0");
  if (!p.parse(args)) return 0;

  if (p.get_flag("--list-presets")) {
    for (const std::string& name : topology::preset_names()) std::printf("%s\n", name.c_str());
    return 0;
  }
  const bool json = p.get_flag("--json");
  const std::string dump = p.get("--dump");
  const bool from_file = !p.get("--topology").empty(), from_preset = !p.get("--preset").empty();
  if (from_file && from_preset)
    throw Error(ErrorKind::kUsage, "--topology and --preset exclude each other", "topotrain probe");

  if (from_file || from_preset) {
    // Nothing to measure: no communicator; under a launcher only its rank 0 prints.
    const topology::Topology t =
        from_file ? topology::load_topology(p.get("--topology")) : topology::preset_topology(p.get("--preset"));
    if (discover_rank_from_env().rank != 0) return 0;
    if (!dump.empty()) topology::save_topology(dump, t);
    print_topology(t, json);
    return 0;
  }

  topology::ProbeOptions opts;
  opts.sizes = parse_probe_sizes(p.get("--sizes"));
  opts.iters = int(p.get_int64_in("--iters", 1, 1000000));
  opts.probe_gpus = !p.get_flag("--no-gpu");
  parallel::CommOptions comm_opts;
  comm_opts.timeout_s = p.get_double("--timeout");
  comm_opts.ranks_per_node = int(p.get_int64_in("--ranks-per-node", 0, 1 << 20));
  const auto comm = parallel::create_communicator(comm_opts);
  return run_on_all_ranks(*comm, "probe", [&] {
    const topology::Topology t = topology::probe_topology(*comm, opts);
    if (comm->rank() != 0) return 0;
    if (!dump.empty()) topology::save_topology(dump, t);
    print_topology(t, json);
    return 0;
  });
}

}  // namespace tt
