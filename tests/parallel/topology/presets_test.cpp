// Presets: every listed name loads and is self-consistent, the figures follow DESIGN.md's ordering,
// multi-node variants have the right network link, and bad names are config errors listing names.
#include "parallel/topology/presets.h"

#include <gtest/gtest.h>

#include "core/device_info.h"

#include "core/error.h"
#include "parallel/topology/topology_io.h"

namespace tt::topology {
namespace {

const Link* network_link(const Topology& t) {
  for (const Link& l : t.links())
    if (l.kind() == LINK_NETWORK) return &l;
  return nullptr;
}

TEST(Presets, EveryNameLoadsAndValidates) {
  const std::vector<std::string> names = preset_names();
  ASSERT_GE(names.size(), 4u + 3u * 3u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Topology t = preset_topology(name);
    EXPECT_EQ(t.name(), name);
    EXPECT_EQ(t.source(), "preset");
    EXPECT_NO_THROW(validate_topology(t, name));
    ASSERT_GE(t.nodes_size(), 1);
    EXPECT_EQ(t.gpus_per_node(), 8);
    EXPECT_EQ(t.ranks_per_node(), 8);
    EXPECT_GT(t.intra_node_busbw_gbps(), 0);
    EXPECT_GT(t.intra_node_latency_us(), 0);
    int gpu_links = 0;
    for (const Link& l : t.links())
      if (l.gpu_a() >= 0) {
        ++gpu_links;
        EXPECT_LT(l.gpu_a(), l.gpu_b());
        EXPECT_EQ(l.node_a(), l.node_b());
        EXPECT_EQ(l.p2p_verified(), t.p2p_all_verified());
        // A ring can not beat its links: busbw <= per-direction link bandwidth.
        EXPECT_LE(t.intra_node_busbw_gbps(), l.bandwidth_gbps());
      }
    EXPECT_EQ(gpu_links, 28 * t.nodes_size());
    for (const Node& n : t.nodes())
      for (const Gpu& g : n.gpus()) {
        EXPECT_GT(g.peak_bf16_tflops(), 0);
        EXPECT_EQ(g.peak_bf16_tflops(), tt::peak_bf16_tflops(g.name()).value_or(0));
        EXPECT_GE(g.memory_bytes(), uint64_t(24) << 30);
      }
  }
}

TEST(Presets, RequiredCombinationsExist) {
  const std::vector<std::string> names = preset_names();
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  for (const char* node : {"8x4090-pcie", "8xa100-sxm", "8xh100-sxm"}) {
    EXPECT_TRUE(has(node)) << node;
    for (const char* net : {"1gbe", "100gbe", "100g-ib", "4x200g-ib"}) {
      const std::string n = std::string("2x") + node + "-" + net;
      EXPECT_TRUE(has(n)) << n;
    }
  }
  EXPECT_TRUE(has("8x3090-pcie"));
}

TEST(Presets, FiguresFollowDesignTable) {
  const Topology h100 = preset_topology("8xh100-sxm"), a100 = preset_topology("8xa100-sxm"),
                 rtx4090 = preset_topology("8x4090-pcie"), rtx3090 = preset_topology("8x3090-pcie");
  EXPECT_GT(h100.intra_node_busbw_gbps(), a100.intra_node_busbw_gbps());
  EXPECT_GT(a100.intra_node_busbw_gbps(), rtx4090.intra_node_busbw_gbps());
  // DESIGN.md ranges of 8-GPU all-reduce busbw.
  EXPECT_GE(rtx4090.intra_node_busbw_gbps(), 20);
  EXPECT_LE(rtx4090.intra_node_busbw_gbps(), 28);
  EXPECT_GE(a100.intra_node_busbw_gbps(), 200);
  EXPECT_LE(a100.intra_node_busbw_gbps(), 235);
  EXPECT_GE(h100.intra_node_busbw_gbps(), 370);
  EXPECT_LE(h100.intra_node_busbw_gbps(), 480);
  // No P2P on 4090s: GPU traffic through host memory; NVLink per direction = half the bidirectional figure.
  EXPECT_FALSE(rtx4090.p2p_all_verified());
  EXPECT_EQ(rtx4090.links(0).kind(), LINK_HOST);
  EXPECT_EQ(rtx3090.links(0).kind(), LINK_PCIE);
  EXPECT_EQ(a100.links(0).kind(), LINK_NVLINK);
  EXPECT_DOUBLE_EQ(a100.links(0).bandwidth_gbps(), 300);
  EXPECT_DOUBLE_EQ(h100.links(0).bandwidth_gbps(), 450);
  EXPECT_TRUE(h100.p2p_all_verified());
  EXPECT_DOUBLE_EQ(h100.nodes(0).gpus(0).peak_bf16_tflops(), 989);
  EXPECT_DOUBLE_EQ(a100.nodes(0).gpus(0).peak_bf16_tflops(), 312);
  EXPECT_DOUBLE_EQ(rtx4090.nodes(0).gpus(0).peak_bf16_tflops(), 165);
  EXPECT_EQ(h100.nodes(0).gpus(0).memory_bytes(), uint64_t(80) << 30);
  EXPECT_EQ(rtx4090.nodes(0).gpus(0).memory_bytes(), uint64_t(24) << 30);
  EXPECT_EQ(network_link(h100), nullptr);
  EXPECT_EQ(h100.nodes_size(), 1);
}

TEST(Presets, TwoNodeVariantsHaveTheirNetwork) {
  struct Case {
    const char* name;
    double gbps;
  } cases[] = {{"2x8x4090-pcie-1gbe", 0.125},
               {"2x8xa100-sxm-100g-ib", 12.5},
               {"2x8xh100-sxm-100gbe", 12.5},
               {"2x8xh100-sxm-400g-ib", 50},
               {"2x8xh100-sxm-4x200g-ib", 100}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Topology t = preset_topology(c.name);
    ASSERT_EQ(t.nodes_size(), 2);
    int gpus = 0;
    for (const Node& n : t.nodes()) gpus += n.gpus_size();
    EXPECT_EQ(gpus, 16);
    const Link* net = network_link(t);
    ASSERT_NE(net, nullptr);
    EXPECT_DOUBLE_EQ(net->bandwidth_gbps(), c.gbps);
    EXPECT_EQ(net->node_a(), 0);
    EXPECT_EQ(net->node_b(), 1);
    EXPECT_EQ(net->gpu_a(), -1);
    EXPECT_GT(t.inter_node_busbw_gbps(), 0);
    EXPECT_LE(t.inter_node_busbw_gbps(), c.gbps);
    EXPECT_GT(t.inter_node_latency_us(), 0);
    EXPECT_LT(t.inter_node_busbw_gbps(), t.intra_node_busbw_gbps());
  }
  // Faster networks: more bandwidth, no more latency.
  const Topology slow = preset_topology("2x8xh100-sxm-1gbe"), fast = preset_topology("2x8xh100-sxm-4x200g-ib");
  EXPECT_LT(slow.inter_node_busbw_gbps(), fast.inter_node_busbw_gbps());
  EXPECT_GT(slow.inter_node_latency_us(), fast.inter_node_latency_us());
  // The intra-node part is the single-node preset's.
  EXPECT_DOUBLE_EQ(fast.intra_node_busbw_gbps(), preset_topology("8xh100-sxm").intra_node_busbw_gbps());
}

TEST(Presets, MoreNodesForScalingExperiments) {
  const Topology t = preset_topology("16x8xa100-sxm-100g-ib");
  EXPECT_EQ(t.nodes_size(), 16);
  int network = 0;
  for (const Link& l : t.links()) network += l.kind() == LINK_NETWORK ? 1 : 0;
  EXPECT_EQ(network, 16 * 15 / 2);
  EXPECT_NO_THROW(validate_topology(t, "preset"));
}

TEST(Presets, UnknownNamesAreConfigErrorsListingTheValidOnes) {
  for (const char* bad : {"", "8xv100-sxm", "1x8xh100-sxm-1gbe", "65x8xh100-sxm-1gbe", "02x8xh100-sxm-1gbe",
                          "2x8xh100-sxm", "2x8xh100-sxm-10gbe", "8xh100-sxm-1gbe"}) {
    SCOPED_TRACE(bad);
    try {
      preset_topology(bad);
      FAIL() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
      EXPECT_NE(std::string(e.what()).find("8x4090-pcie"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("2x8xh100-sxm-4x200g-ib"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tt::topology
