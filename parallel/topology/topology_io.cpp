// Topology serialization and description (see topology_io.h).
#include "parallel/topology/topology_io.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/fs.h"
#include "parallel/comm/communicator.h"

namespace tt::topology {

namespace {

namespace pb = google::protobuf;

const char* kFileHint =
    "a Topology in protobuf text format or JSON (parallel/topology/topology.proto); "
    "`topotrain probe --dump FILE` writes one";

// Keeps the first parser error with its position (lines and columns reported 1-based).
class FirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (message_.empty()) message_ = str("line ", line + 1, " column ", column + 1, ": ", message);
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

const char* kind_name(LinkKind k) {
  switch (k) {
    case LINK_NVLINK:
      return "NVLink";
    case LINK_PCIE:
      return "PCIe P2P";
    case LINK_HOST:
      return "via host";
    case LINK_SHM:
      return "shared memory";
    case LINK_NETWORK:
      return "network";
    default:
      return "unknown";
  }
}

char kind_letter(LinkKind k) {
  switch (k) {
    case LINK_NVLINK:
      return 'N';
    case LINK_PCIE:
      return 'P';
    case LINK_HOST:
      return 'H';
    default:
      return '?';
  }
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string gbps(double v) { return v >= 100 ? fmt("%.0f", v) : v >= 10 ? fmt("%.1f", v) : fmt("%.3g", v); }

std::string ranks_str(const Node& n) {
  if (n.ranks_size() == 0) return "-";
  std::string s;
  for (int i = 0; i < n.ranks_size();) {
    int j = i;
    while (j + 1 < n.ranks_size() && n.ranks(j + 1) == n.ranks(j) + 1) ++j;
    s += (s.empty() ? "" : ",") + (j > i ? str(n.ranks(i), "-", n.ranks(j)) : str(n.ranks(i)));
    i = j + 1;
  }
  return s;
}

// The GPU table and link matrix of node i (without the node's header line).
std::string describe_node_body(const Topology& t, int i) {
  const Node& node = t.nodes(i);
  std::ostringstream os;
  if (node.gpus_size() == 0) return "  no GPUs\n";
  char line[256];
  std::snprintf(line, sizeof(line), "  %-4s %-26s %-4s %-10s %-18s %-5s %-14s %s\n", "gpu", "name", "cc", "memory",
                "pcie (max)", "numa", "h2d/d2h GB/s", "bf16 TF/s");
  os << line;
  for (const Gpu& g : node.gpus()) {
    std::string pcie = g.pcie_gen() > 0 ? str("gen", g.pcie_gen(), " x", g.pcie_width()) : "-";
    if (g.pcie_max_gen() > 0) pcie += str(" (gen", g.pcie_max_gen(), " x", g.pcie_max_width(), ")");
    const std::string host =
        g.host_to_device_gbps() > 0 ? gbps(g.host_to_device_gbps()) + "/" + gbps(g.device_to_host_gbps()) : "-";
    std::snprintf(line, sizeof(line), "  %-4d %-26s %-4s %-10s %-18s %-5s %-14s %s\n", g.index(),
                  g.name().substr(0, 26).c_str(),
                  g.compute_capability() > 0 ? fmt("%.1f", g.compute_capability() / 10.0).c_str() : "-",
                  parallel::format_size(double(g.memory_bytes())).c_str(), pcie.c_str(),
                  g.numa_node() >= 0 ? str(g.numa_node()).c_str() : "-", host.c_str(),
                  g.peak_bf16_tflops() > 0 ? fmt("%.0f", g.peak_bf16_tflops()).c_str() : "-");
    os << line;
  }
  // Links between this node's GPUs.
  const int n = node.gpus_size();
  std::map<std::pair<int, int>, const Link*> pair;
  for (const Link& l : t.links())
    if (l.node_a() == i && l.node_b() == i && l.gpu_a() >= 0 && l.gpu_b() >= 0)
      pair[{std::min(l.gpu_a(), l.gpu_b()), std::max(l.gpu_a(), l.gpu_b())}] = &l;
  if (n < 2) return os.str();
  if (n <= 16) {
    os << "  GPU links, GB/s per direction (N NVLink, P PCIe P2P, H via host memory; ! P2P not verified, "
          "m measured):\n      ";
    for (int b = 0; b < n; ++b) os << fmt("%8.0f", b);
    os << "\n";
    for (int a = 0; a < n; ++a) {
      os << "  " << fmt("%4.0f", a);
      for (int b = 0; b < n; ++b) {
        std::string cell = "-";
        auto it = pair.find({std::min(a, b), std::max(a, b)});
        if (a != b && it != pair.end()) {
          const Link& l = *it->second;
          cell = std::string(1, kind_letter(l.kind())) + gbps(l.bandwidth_gbps());
          if (l.kind() != LINK_HOST && !l.p2p_verified()) cell += "!";
          if (l.measured()) cell += "m";
        } else if (a != b) {
          cell = "?";
        }
        char c[32];
        std::snprintf(c, sizeof(c), "%8s", cell.c_str());
        os << c;
      }
      os << "\n";
    }
  }
  std::map<std::string, int> kinds;
  int verified = 0;
  for (const auto& [ab, l] : pair) {
    ++kinds[str(kind_name(l->kind()), " ", gbps(l->bandwidth_gbps()), " GB/s")];
    verified += l->p2p_verified() ? 1 : 0;
  }
  os << "  " << pair.size() << " of " << n * (n - 1) / 2 << " GPU pairs:";
  for (const auto& [k, c] : kinds) os << " " << c << "x " << k << ";";
  os << " P2P verified " << verified << "/" << pair.size() << "\n";
  return os.str();
}

}  // namespace

std::string topology_to_text(const Topology& t) {
  std::string out;
  pb::TextFormat::PrintToString(t, &out);
  return out;
}

std::string topology_to_json(const Topology& t) {
  pb::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  const auto status = pb::util::MessageToJsonString(t, &out, o);
  if (!status.ok()) throw Error(ErrorKind::kInternal, "cannot print topology as JSON: " + status.ToString());
  return out;
}

Topology topology_from_text(const std::string& text, const std::string& where) {
  Topology t;
  pb::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &t))
    throw Error(ErrorKind::kConfig, "cannot parse topology: " + errors.message(), where, kFileHint);
  validate_topology(t, where);
  return t;
}

Topology topology_from_json(const std::string& json, const std::string& where) {
  Topology t;
  pb::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;
  const auto status = pb::util::JsonStringToMessage(json, &t, o);
  if (!status.ok())
    throw Error(ErrorKind::kConfig, "cannot parse topology JSON: " + status.ToString(), where, kFileHint);
  validate_topology(t, where);
  return t;
}

void validate_topology(const Topology& t, const std::string& where) {
  auto bad = [&](const std::string& what) {
    throw Error(ErrorKind::kConfig, "invalid topology: " + what, where, kFileHint);
  };
  auto non_negative = [&](const std::string& field, double v) {
    if (!std::isfinite(v) || v < 0) bad(str(field, " = ", v, " must be finite and >= 0"));
  };
  if (t.nodes_size() == 0) bad("it describes no nodes (an empty file?)");
  if (t.gpus_per_node() < 0) bad(str("gpus_per_node = ", t.gpus_per_node()));
  for (int i = 0; i < t.nodes_size(); ++i)
    if (t.nodes(i).gpus_size() > 0 && t.nodes(i).gpus_size() != t.gpus_per_node())
      bad(str("gpus_per_node = ", t.gpus_per_node(), " but node ", i, " lists ", t.nodes(i).gpus_size(),
              " GPU(s); every node must list gpus_per_node GPUs (or none, for CPU ranks)"));
  if (t.ranks_per_node() < 0) bad(str("ranks_per_node = ", t.ranks_per_node()));
  non_negative("intra_node_busbw_gbps", t.intra_node_busbw_gbps());
  non_negative("inter_node_busbw_gbps", t.inter_node_busbw_gbps());
  non_negative("intra_node_latency_us", t.intra_node_latency_us());
  non_negative("inter_node_latency_us", t.inter_node_latency_us());
  const int nodes = t.nodes_size();
  for (int i = 0; i < t.links_size(); ++i) {
    const Link& l = t.links(i);
    const std::string f = str("links[", i, "]");
    for (const auto& [node, gpu, side] :
         {std::tuple{l.node_a(), l.gpu_a(), "a"}, std::tuple{l.node_b(), l.gpu_b(), "b"}}) {
      if (node < 0 || node >= nodes) bad(str(f, ".node_", side, " = ", node, " but there are ", nodes, " node(s)"));
      if (gpu < -1 || gpu >= t.nodes(node).gpus_size())
        bad(str(f, ".gpu_", side, " = ", gpu, " but node ", node, " has ", t.nodes(node).gpus_size(),
                " GPU(s) (-1 = the node as a whole)"));
    }
    non_negative(f + ".bandwidth_gbps", l.bandwidth_gbps());
    non_negative(f + ".latency_us", l.latency_us());
  }
  for (int i = 0; i < t.measurements_size(); ++i) {
    const CollectiveMeasurement& m = t.measurements(i);
    non_negative(str("measurements[", i, "].time_us"), m.time_us());
    non_negative(str("measurements[", i, "].bus_bandwidth_gbps"), m.bus_bandwidth_gbps());
  }
  for (int i = 0; i < t.codec_size(); ++i) {
    const CodecMeasurement& c = t.codec(i);
    const std::string name = str("codec[", i, "]");
    if (c.payload() != "bf16" && c.payload() != "int8" && c.payload() != "fp8")
      bad(str(name, ".payload = '", c.payload(), "' (bf16, int8 or fp8)"));
    non_negative(name + ".compress_gbps", c.compress_gbps());
    non_negative(name + ".decompress_add_gbps", c.decompress_add_gbps());
  }
  for (int i = 0; i < t.collective_fits_size(); ++i) {
    const CollectiveFit& f = t.collective_fits(i);
    const std::string name = str("collective_fits[", i, "]");
    if (f.op() != "reduce_scatter" && f.op() != "all_gather")
      bad(str(name, ".op = '", f.op(), "' (reduce_scatter or all_gather)"));
    non_negative(name + ".intra_node_busbw_gbps", f.intra_node_busbw_gbps());
    non_negative(name + ".inter_node_busbw_gbps", f.inter_node_busbw_gbps());
    non_negative(name + ".intra_node_latency_us", f.intra_node_latency_us());
    non_negative(name + ".inter_node_latency_us", f.inter_node_latency_us());
  }
}

void save_topology(const std::string& path, const Topology& t) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  atomic_write_string(path, json ? topology_to_json(t)
                                 : "# topotrain Topology (parallel/topology/topology.proto), protobuf text format\n" +
                                       topology_to_text(t));
}

Topology load_topology(const std::string& path) {
  const std::string content = read_file_to_string(path, ErrorKind::kConfig);
  const size_t first = content.find_first_not_of(" \t\r\n");
  Topology t = first != std::string::npos && content[first] == '{' ? topology_from_json(content, path)
                                                                   : topology_from_text(content, path);
  t.set_source("file:" + path);
  return t;
}

std::string describe_topology(const Topology& t) {
  std::ostringstream os;
  int total_gpus = 0;
  for (const Node& n : t.nodes()) total_gpus += n.gpus_size();
  os << "topology " << (t.name().empty() ? "(unnamed)" : t.name()) << " [" << (t.source().empty() ? "?" : t.source())
     << "]: " << t.nodes_size() << " node(s), " << total_gpus << " GPU(s), " << t.gpus_per_node() << " GPU(s) and "
     << t.ranks_per_node() << " rank(s) per node\n";

  std::string previous_body;
  for (int i = 0; i < t.nodes_size();) {
    const std::string body = describe_node_body(t, i);
    int j = i;  // nodes i+1..j repeat node i
    while (j + 1 < t.nodes_size() && describe_node_body(t, j + 1) == body) ++j;
    const Node& n = t.nodes(i);
    os << "node " << i << " " << (n.hostname().empty() ? "-" : n.hostname()) << ": "
       << (n.cpu_cores() > 0 ? str(n.cpu_cores(), " CPUs") : "CPUs ?") << ", "
       << (n.numa_nodes() > 0 ? str(n.numa_nodes(), " NUMA node(s)") : "NUMA ?") << ", ranks " << ranks_str(n) << "\n"
       << body;
    if (j > i) os << "nodes " << i + 1 << "-" << j << ": same as node " << i << "\n";
    i = j + 1;
  }

  for (const Link& l : t.links()) {
    if (l.kind() == LINK_NETWORK)
      os << "network node " << l.node_a() << " <-> node " << l.node_b() << ": " << gbps(l.bandwidth_gbps()) << " GB/s, "
         << fmt("%.1f", l.latency_us()) << " us" << (l.measured() ? " (measured busbw)" : " (nominal)") << "\n";
    if (l.kind() == LINK_SHM)
      os << "shared memory on node " << l.node_a() << ": "
         << (l.bandwidth_gbps() > 0 ? gbps(l.bandwidth_gbps()) + " GB/s, " + fmt("%.1f", l.latency_us()) + " us"
                                    : std::string("not measured"))
         << (l.measured() ? " (measured busbw)" : "") << "\n";
  }
  auto figure = [](double bw, double lat) {
    return bw > 0 ? str(gbps(bw), " GB/s, ", fmt("%.1f", lat), " us") : std::string("n/a");
  };
  os << "all-reduce busbw: intra-node " << figure(t.intra_node_busbw_gbps(), t.intra_node_latency_us())
     << " | inter-node " << figure(t.inter_node_busbw_gbps(), t.inter_node_latency_us()) << "\n";
  for (const CollectiveFit& f : t.collective_fits())
    os << f.op() << " busbw: intra-node " << figure(f.intra_node_busbw_gbps(), f.intra_node_latency_us())
       << " | inter-node " << figure(f.inter_node_busbw_gbps(), f.inter_node_latency_us()) << "\n";

  if (t.measurements_size() > 0) {
    const CollectiveMeasurement& m0 = t.measurements(0);
    os << "measured "
       << (std::any_of(t.measurements().begin(), t.measurements().end(),
                       [&](const CollectiveMeasurement& m) { return m.op() != m0.op(); })
               ? std::string("collectives")
               : m0.op())
       << " through the " << (m0.backend().empty() ? "?" : m0.backend()) << " communicator, " << m0.ranks()
       << " rank(s) (slowest rank's mean):\n";
    char line[160];
    std::snprintf(line, sizeof(line), "  %-16s %10s %12s %12s  %s\n", "op", "size", "time(us)", "busbw(GB/s)", "call");
    os << line;
    for (const CollectiveMeasurement& m : t.measurements()) {
      std::snprintf(line, sizeof(line), "  %-16s %10s %12.1f %12.3f  %s\n", m.op().c_str(),
                    parallel::format_size(double(m.bytes())).c_str(), m.time_us(), m.bus_bandwidth_gbps(),
                    ((m.call().empty() ? std::string("?") : m.call()) +
                     (m.scope().empty() ? std::string() : " (" + m.scope() + ")"))
                        .c_str());
      os << line;
    }
  }
  for (const CodecMeasurement& c : t.codec())
    os << "codec " << c.payload() << " (CPU, " << c.threads() << " thread(s)/rank): compress "
       << gbps(c.compress_gbps()) << " GB/s, decompress-add " << gbps(c.decompress_add_gbps())
       << " GB/s of fp32 gradients\n";

  std::vector<std::string> hints;
  if (t.gpus_per_node() > 1 && !t.p2p_all_verified())
    hints.push_back(
        "P2P unavailable or unverified: NCCL_P2P_DISABLE=1 recommended (a P2P path that fails the copy "
        "check hangs or corrupts NCCL collectives)");
  bool all_nvlink = t.gpus_per_node() > 1;
  for (const Link& l : t.links())
    if (l.gpu_a() >= 0 && l.kind() != LINK_NVLINK) all_nvlink = false;
  if (all_nvlink && t.p2p_all_verified())
    hints.push_back("NVLink between all GPU pairs with verified P2P: NCCL's defaults use it");
  std::set<int> numa;
  for (int i = 0; i < t.nodes_size(); ++i)
    for (const Gpu& g : t.nodes(i).gpus()) {
      if (g.numa_node() >= 0) numa.insert(g.numa_node());
      if (g.pcie_max_gen() > 0 && (g.pcie_gen() < g.pcie_max_gen() || g.pcie_width() < g.pcie_max_width()))
        hints.push_back(str("node ", i, " GPU ", g.index(), ": PCIe link gen", g.pcie_gen(), " x", g.pcie_width(),
                            " is below its maximum gen", g.pcie_max_gen(), " x", g.pcie_max_width(),
                            " (idle GPUs downtrain; if it persists under load, check the slot or riser)"));
    }
  if (numa.size() > 1)
    hints.push_back("GPUs on several NUMA nodes: bind each rank near its GPU (local_cpulist; mpirun --bind-to numa)");
  if (t.nodes_size() > 1 && t.inter_node_busbw_gbps() > 0 && t.inter_node_busbw_gbps() < 2)
    hints.push_back(str("inter-node busbw ", gbps(t.inter_node_busbw_gbps()),
                        " GB/s: the network dominates; set NCCL_SOCKET_IFNAME if NCCL picks the wrong interface"));
  if (!hints.empty()) {
    os << "hints:\n";
    for (const std::string& h : hints) os << "  - " << h << "\n";
  }
  if (t.notes_size() > 0) {
    os << "notes:\n";
    for (const std::string& n : t.notes()) os << "  - " << n << "\n";
  }
  return os.str();
}

void add_network_links(Topology& t, int num_nodes, double bandwidth_gbps, double latency_us, bool measured) {
  for (int a = 0; a < num_nodes; ++a)
    for (int b = a + 1; b < num_nodes; ++b) {
      Link* l = t.add_links();
      l->set_kind(LINK_NETWORK);
      l->set_node_a(a);
      l->set_gpu_a(-1);
      l->set_node_b(b);
      l->set_gpu_b(-1);
      l->set_bandwidth_gbps(bandwidth_gbps);
      l->set_latency_us(latency_us);
      l->set_measured(measured);
    }
}

}  // namespace tt::topology
