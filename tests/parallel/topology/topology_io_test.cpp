// Topology files: text and JSON round trips, errors that name the file, validation of link
// endpoints, and the description's hints.
#include "parallel/topology/topology_io.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "parallel/topology/presets.h"
#include "tests/test_util.h"

namespace tt::topology {
namespace {

bool same(const Topology& a, const Topology& b) { return google::protobuf::util::MessageDifferencer::Equals(a, b); }

Topology sample() {
  Topology t = preset_topology("2x8x4090-pcie-100g-ib");
  CollectiveMeasurement* m = t.add_measurements();
  m->set_op("all_reduce");
  m->set_bytes(1 << 20);
  m->set_ranks(16);
  m->set_time_us(123.25);
  m->set_bus_bandwidth_gbps(15.9);
  m->set_backend("mpi");
  t.add_notes("a note with \"quotes\" and ünïcode");
  t.mutable_nodes(1)->add_ranks(8);
  t.mutable_nodes(0)->mutable_gpus(0)->set_local_cpulist("0-31");
  return t;
}

TEST(TopologyIo, TextAndJsonRoundTrip) {
  const Topology t = sample();
  EXPECT_TRUE(same(topology_from_text(topology_to_text(t), "mem"), t));
  EXPECT_TRUE(same(topology_from_json(topology_to_json(t), "mem"), t));
  // JSON uses the .proto field names and prints defaults.
  const std::string json = topology_to_json(preset_topology("8xh100-sxm"));
  EXPECT_NE(json.find("\"intra_node_busbw_gbps\""), std::string::npos);
  EXPECT_NE(json.find("\"inter_node_busbw_gbps\": 0"), std::string::npos);
}

TEST(TopologyIo, FilesRoundTripAndRecordTheirSource) {
  test::TempDir dir;
  const Topology t = sample();
  for (const char* name : {"topo.pbtxt", "topo.json"}) {
    SCOPED_TRACE(name);
    const std::string path = dir.file(name);
    save_topology(path, t);
    const std::string content = test::read_file(path);
    EXPECT_EQ(content.find('{') == 0, std::string(name) == "topo.json");
    Topology back = load_topology(path);
    EXPECT_EQ(back.source(), "file:" + path);
    back.set_source(t.source());
    EXPECT_TRUE(same(back, t));
  }
}

void expect_config_error(const std::string& path, const std::string& needle) {
  try {
    load_topology(path);
    FAIL() << "loaded " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_EQ(e.where(), path);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TopologyIo, BadFilesAreConfigErrorsNamingTheFile) {
  test::TempDir dir;
  expect_config_error(dir.file("missing.pbtxt"), "missing.pbtxt");
  test::write_file(dir.file("syntax.pbtxt"), "name: \"x\"\nnodes {\n  hostname: 3 4\n");
  expect_config_error(dir.file("syntax.pbtxt"), "line 3");
  test::write_file(dir.file("unknown.pbtxt"), "name: \"x\"\nbogus_field: 1\n");
  expect_config_error(dir.file("unknown.pbtxt"), "bogus_field");
  test::write_file(dir.file("bad.json"), "{\"name\": \"x\", \"nodes\": [}");
  expect_config_error(dir.file("bad.json"), "JSON");
  test::write_file(dir.file("unknown.json"), "{\"name\": \"x\", \"bogus\": 1}");
  expect_config_error(dir.file("unknown.json"), "bogus");
  // Valid syntax, invalid references.
  test::write_file(dir.file("dangling.pbtxt"),
                   "gpus_per_node: 1\nnodes { hostname: \"a\" gpus { index: 0 } }\n"
                   "links { kind: LINK_NVLINK node_a: 0 gpu_a: 0 node_b: 0 gpu_b: 1 bandwidth_gbps: 1 }\n");
  expect_config_error(dir.file("dangling.pbtxt"), "links[0].gpu_b = 1");
  test::write_file(dir.file("node.pbtxt"),
                   "nodes { }\nlinks { kind: LINK_NETWORK node_a: 0 gpu_a: -1 node_b: 2 gpu_b: -1 }\n");
  expect_config_error(dir.file("node.pbtxt"), "links[0].node_b = 2");
  test::write_file(dir.file("negative.pbtxt"), "nodes { }\nintra_node_busbw_gbps: -3\n");
  expect_config_error(dir.file("negative.pbtxt"), "intra_node_busbw_gbps");
  // An empty file, and GPUs listed that gpus_per_node does not count.
  test::write_file(dir.file("empty.pbtxt"), "");
  expect_config_error(dir.file("empty.pbtxt"), "no nodes");
  test::write_file(dir.file("uncounted.pbtxt"), "gpus_per_node: 0\nnodes { gpus { index: 0 } gpus { index: 1 } }\n");
  expect_config_error(dir.file("uncounted.pbtxt"), "gpus_per_node = 0 but node 0 lists 2 GPU(s)");
}

TEST(TopologyIo, DescribeNamesWhatMatters) {
  const std::string d4090 = describe_topology(preset_topology("2x8x4090-pcie-1gbe"));
  EXPECT_NE(d4090.find("2 node(s), 16 GPU(s)"), std::string::npos) << d4090;
  EXPECT_NE(d4090.find("NVIDIA GeForce RTX 4090"), std::string::npos);
  EXPECT_NE(d4090.find("P2P unavailable or unverified: NCCL_P2P_DISABLE=1 recommended"), std::string::npos);
  EXPECT_NE(d4090.find("nodes 1-1: same as node 0"), std::string::npos);
  EXPECT_NE(d4090.find("network node 0 <-> node 1"), std::string::npos);
  EXPECT_NE(d4090.find("intra-node 22.0 GB/s"), std::string::npos);
  EXPECT_NE(d4090.find("P2P verified 0/28"), std::string::npos);

  const std::string h100 = describe_topology(preset_topology("8xh100-sxm"));
  EXPECT_EQ(h100.find("NCCL_P2P_DISABLE"), std::string::npos) << h100;
  EXPECT_NE(h100.find("N450"), std::string::npos);
  EXPECT_NE(h100.find("P2P verified 28/28"), std::string::npos);
  EXPECT_NE(h100.find("intra-node 400 GB/s"), std::string::npos);

  // Probe-only fields: a downtrained link and GPUs on two NUMA nodes.
  Topology t = preset_topology("8xa100-sxm");
  Gpu* g = t.mutable_nodes(0)->mutable_gpus(2);
  g->set_pcie_gen(3);
  g->set_pcie_width(8);
  g->set_pcie_max_gen(4);
  g->set_pcie_max_width(16);
  g->set_numa_node(1);
  t.mutable_nodes(0)->mutable_gpus(0)->set_numa_node(0);
  t.add_notes("no P2P between 1 of 28 GPU pair(s)");
  const std::string d = describe_topology(t);
  EXPECT_NE(d.find("GPU 2: PCIe link gen3 x8 is below its maximum gen4 x16"), std::string::npos) << d;
  EXPECT_NE(d.find("several NUMA nodes"), std::string::npos);
  EXPECT_NE(d.find("notes:\n  - no P2P between 1 of 28"), std::string::npos);
}

TEST(TopologyIo, DescribeEmptyTopologyDoesNotCrash) {
  EXPECT_NE(describe_topology(Topology()).find("0 node(s)"), std::string::npos);
}

}  // namespace
}  // namespace tt::topology
