// The alpha-beta collective model against hand-computed numbers, its monotonicity, and the
// Topology -> Cluster distillation (busbw vs nominal links, rank restriction, node replication).
#include "parallel/cost/collective_cost.h"

#include <gtest/gtest.h>

#include "parallel/topology/presets.h"

namespace tt::cost {
namespace {

LinkClass link(double busbw_gbps, double latency_us = 0) {
  LinkClass l;
  l.busbw_gbps = busbw_gbps;
  l.latency_us = latency_us;
  return l;
}

// m nodes x g GPUs with the given intra/inter link classes.
Cluster cluster(int m, int g, double intra_gbps, double inter_gbps, double intra_us = 0, double inter_us = 0) {
  Cluster c;
  c.nodes = m;
  c.ranks_per_node = g;
  c.ranks = m * g;
  c.intra = link(intra_gbps, intra_us);
  c.inter = link(inter_gbps, inter_us);
  return c;
}

// A tiny topology: `nodes` nodes of `gpus` GPUs, every pair linked by `kind` at `gbps`, nodes by a
// network of `net_gbps` (0 = none).
topology::Topology tiny_topology(int nodes, int gpus, topology::LinkKind kind, double gbps, double net_gbps) {
  topology::Topology t;
  t.set_name("tiny");
  t.set_source("preset");
  t.set_gpus_per_node(gpus);
  t.set_ranks_per_node(gpus);
  for (int n = 0; n < nodes; ++n) {
    auto* node = t.add_nodes();
    for (int g = 0; g < gpus; ++g) {
      auto* gpu = node->add_gpus();
      gpu->set_index(g);
      gpu->set_name("NVIDIA H100 80GB HBM3");
      gpu->set_memory_bytes(80ull << 30);
    }
    for (int a = 0; a < gpus; ++a)
      for (int b = a + 1; b < gpus; ++b) {
        auto* l = t.add_links();
        l->set_kind(kind);
        l->set_node_a(n);
        l->set_node_b(n);
        l->set_gpu_a(a);
        l->set_gpu_b(b);
        l->set_bandwidth_gbps(gbps);
        l->set_latency_us(4);
      }
  }
  for (int a = 0; a < nodes && net_gbps > 0; ++a)
    for (int b = a + 1; b < nodes; ++b) {
      auto* l = t.add_links();
      l->set_kind(topology::LINK_NETWORK);
      l->set_node_a(a);
      l->set_node_b(b);
      l->set_gpu_a(-1);
      l->set_gpu_b(-1);
      l->set_bandwidth_gbps(net_gbps);
      l->set_latency_us(20);
    }
  return t;
}

TEST(CollectiveCost, RingAllReduceOf1GbOn8GpusAt100GbpsBusbw) {
  // 2(n-1)/n · S/B = 1.75 · 1e9 / 1e11 = 17.5 ms; latency 2(n-1)·α = 14 · 5 us = 70 us.
  const CollectiveCost c = ring_cost(Collective::kAllReduce, 8, 1e9, link(100, 5));
  EXPECT_NEAR(c.transfer_s, 17.5e-3, 1e-12);
  EXPECT_NEAR(c.latency_s, 70e-6, 1e-12);
  EXPECT_NEAR(c.total_s(), 17.57e-3, 1e-12);
  // nccl-tests algbw = S / time = busbw · n / (2(n-1)) = 57.14 GB/s (latency aside).
  EXPECT_NEAR(1e9 / c.transfer_s / 1e9, 100.0 * 8 / 14, 1e-9);
}

TEST(CollectiveCost, RingReduceScatterAndAllGatherMoveHalfTheAllReduce) {
  for (Collective op : {Collective::kReduceScatter, Collective::kAllGather}) {
    const CollectiveCost c = ring_cost(op, 8, 1e9, link(100, 5));
    EXPECT_NEAR(c.transfer_s, 8.75e-3, 1e-12) << collective_name(op);  // (n-1)/n · S/B
    EXPECT_NEAR(c.latency_s, 35e-6, 1e-12) << collective_name(op);     // (n-1)·α
  }
  EXPECT_EQ(ring_cost(Collective::kAllReduce, 1, 1e9, link(100, 5)).total_s(), 0.0);  // one rank: nothing to do
}

TEST(CollectiveCost, TreeTradesBandwidthForLatency) {
  // 2·S/B = 20 ms, 2·log2(8)·α = 6 · 5 us.
  const CollectiveCost tree = tree_all_reduce_cost(8, 1e9, link(100, 5));
  EXPECT_NEAR(tree.transfer_s, 20e-3, 1e-12);
  EXPECT_NEAR(tree.latency_s, 30e-6, 1e-12);
  // Large message: ring wins; 64 KB: tree wins (latency-bound).
  EXPECT_LT(ring_cost(Collective::kAllReduce, 8, 1e9, link(100, 5)).total_s(), tree.total_s());
  EXPECT_LT(tree_all_reduce_cost(8, 65536, link(100, 5)).total_s(),
            ring_cost(Collective::kAllReduce, 8, 65536, link(100, 5)).total_s());
}

TEST(CollectiveCost, HierarchicalHandComputedAndBeatsFlatWhenNetworkIsSlow) {
  // 2 nodes x 8, intra 100 GB/s, inter 10 GB/s, no latency, S = 1 GB:
  // intra RS 7/8·S/100 = 8.75 ms, inter AR 2·1/2·S/10 = 100 ms, intra AG 8.75 ms -> 117.5 ms;
  // flat ring at the network: 2·15/16·S/10 = 187.5 ms.
  const Cluster cl = cluster(2, 8, 100, 10);
  const double hier = collective_cost(Collective::kAllReduce, Algorithm::kHierarchical, 1e9, cl).total_s();
  const double flat = collective_cost(Collective::kAllReduce, Algorithm::kRing, 1e9, cl).total_s();
  EXPECT_NEAR(hier, 117.5e-3, 1e-9);
  EXPECT_NEAR(flat, 187.5e-3, 1e-9);
  EXPECT_LT(hier, flat);
  // Reduce-scatter: 8.75 ms + 1/2·S/10 = 58.75 ms.
  EXPECT_NEAR(collective_cost(Collective::kReduceScatter, Algorithm::kHierarchical, 1e9, cl).total_s(), 58.75e-3, 1e-9);
  // With a network as fast as the node, the extra phases make hierarchical no better.
  const Cluster even = cluster(2, 8, 100, 100);
  EXPECT_GE(collective_cost(Collective::kAllReduce, Algorithm::kHierarchical, 1e9, even).total_s(),
            collective_cost(Collective::kAllReduce, Algorithm::kRing, 1e9, even).total_s());
  // On one node hierarchical is the flat ring.
  const Cluster one = cluster(1, 8, 100, 10);
  EXPECT_DOUBLE_EQ(collective_cost(Collective::kAllReduce, Algorithm::kHierarchical, 1e9, one).total_s(),
                   collective_cost(Collective::kAllReduce, Algorithm::kRing, 1e9, one).total_s());
}

TEST(CollectiveCost, MoreBandwidthNeverTakesLonger) {
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHierarchical}) {
    double last_intra = 1e30, last_inter = 1e30;
    for (double bw : {0.125, 1.0, 12.5, 25.0, 100.0, 400.0}) {
      const double t_intra = collective_cost(Collective::kAllReduce, a, 5e8, cluster(2, 8, bw, 12.5, 5, 10)).total_s();
      const double t_inter = collective_cost(Collective::kAllReduce, a, 5e8, cluster(2, 8, 400, bw, 5, 10)).total_s();
      EXPECT_LE(t_intra, last_intra) << algorithm_name(a) << " intra " << bw;
      EXPECT_LE(t_inter, last_inter) << algorithm_name(a) << " inter " << bw;
      last_intra = t_intra;
      last_inter = t_inter;
    }
  }
}

TEST(CollectiveCost, PayloadBytesAndCodecCost) {
  EXPECT_EQ(payload_bytes_per_elem(Payload::kFp32), 4.0);
  EXPECT_EQ(payload_bytes_per_elem(Payload::kBf16), 2.0);
  EXPECT_DOUBLE_EQ(payload_bytes_per_elem(Payload::kInt8), 1.015625);  // 1 B + 4 B scale per 256
  EXPECT_DOUBLE_EQ(payload_bytes_per_elem(Payload::kFp8), 1.015625);   // E5M2 codes, the same block scales
  EXPECT_STREQ(payload_name(Payload::kFp8), "fp8+ef");
  EXPECT_EQ(codec_bytes_per_elem(Payload::kFp8), codec_bytes_per_elem(Payload::kInt8));
  EXPECT_EQ(codec_time_s(Payload::kFp32, 1 << 20, 1000), 0.0);
  // bf16: 12 B/elem; int8+EF: 2·(4 + 1.015625) + 8 = 18.03125 B/elem, at 1 TB/s.
  EXPECT_NEAR(codec_time_s(Payload::kBf16, 1000000, 1000), 12e6 / 1e12, 1e-15);
  EXPECT_NEAR(codec_time_s(Payload::kInt8, 1000000, 1000), 18.03125e6 / 1e12, 1e-15);
}

// The probe's CPU codec measurement prices CPU clusters' codec; GPU clusters and topologies
// without one keep the memory-bandwidth formula.
TEST(ClusterOf, MeasuredCodecPricesCpuRanks) {
  topology::Topology t;
  auto* node = t.add_nodes();
  node->add_ranks(0);
  node->add_ranks(1);
  t.set_ranks_per_node(2);
  t.set_intra_node_busbw_gbps(1.0);
  Cluster plain = cluster_of(t);
  EXPECT_FALSE(plain.codec[int(Payload::kInt8)].measured());
  EXPECT_DOUBLE_EQ(codec_time_s(Payload::kInt8, 1000000, plain),
                   codec_time_s(Payload::kInt8, 1000000, plain.mem_bw_gbps));
  EXPECT_DOUBLE_EQ(decompress_add_time_s(Payload::kInt8, 1000000, plain),
                   1000000 * 9.015625 / (plain.mem_bw_gbps * 1e9));

  auto* c = t.add_codec();
  c->set_payload("int8");
  c->set_compress_gbps(2.0);        // 4 MB of fp32 gradients in 2 ms
  c->set_decompress_add_gbps(4.0);  // ... in 1 ms
  const Cluster measured = cluster_of(t);
  ASSERT_TRUE(measured.codec[int(Payload::kInt8)].measured());
  EXPECT_FALSE(measured.codec[int(Payload::kBf16)].measured());
  EXPECT_NEAR(codec_time_s(Payload::kInt8, 1000000, measured), 2e-3 + 1e-3, 1e-12);
  EXPECT_NEAR(decompress_add_time_s(Payload::kInt8, 1000000, measured), 1e-3, 1e-12);
  EXPECT_EQ(codec_time_s(Payload::kFp32, 1000000, measured), 0.0);

  t.mutable_nodes(0)->add_gpus()->set_name("NVIDIA H100 80GB HBM3");  // GPU ranks run their own codec
  EXPECT_FALSE(cluster_of(t).codec[int(Payload::kInt8)].measured());
}

TEST(ClusterOf, NominalLinksWithoutBusbwAndMeasuredBusbwWhenSet) {
  topology::Topology t = tiny_topology(2, 4, topology::LINK_NVLINK, 300, 25);
  Cluster c = cluster_of(t);
  EXPECT_EQ(c.ranks, 8);
  EXPECT_EQ(c.nodes, 2);
  EXPECT_EQ(c.ranks_per_node, 4);
  EXPECT_EQ(c.intra.busbw_gbps, 300);
  EXPECT_FALSE(c.intra.from_busbw);
  EXPECT_EQ(c.intra.latency_us, 4);
  EXPECT_EQ(c.inter.busbw_gbps, 25);
  EXPECT_EQ(c.inter.latency_us, 20);
  EXPECT_TRUE(c.p2p_verified);  // a preset's NVLink
  EXPECT_EQ(c.mem_bw_gbps, 3350);

  t.set_intra_node_busbw_gbps(220);
  t.set_inter_node_busbw_gbps(11);
  t.set_inter_node_latency_us(7);
  c = cluster_of(t);
  EXPECT_EQ(c.intra.busbw_gbps, 220);
  EXPECT_TRUE(c.intra.from_busbw);
  EXPECT_EQ(c.inter.busbw_gbps, 11);
  EXPECT_EQ(c.inter.latency_us, 7);
}

TEST(ClusterOf, PerCollectiveFitsPriceTheirCollectiveOnly) {
  // One CPU node of 2 ranks probed at 1 GB/s all-reduce busbw; reduce_scatter measured at 0.4 GB/s
  // (and 30 us), all_gather not fitted.
  topology::Topology t;
  t.set_name("probed");
  t.set_source("probe");
  t.set_ranks_per_node(2);
  t.add_nodes()->add_ranks(0);
  t.mutable_nodes(0)->add_ranks(1);
  t.set_intra_node_busbw_gbps(1.0);
  t.set_intra_node_latency_us(5);
  const Cluster before = cluster_of(t);
  auto* f = t.add_collective_fits();
  f->set_op("reduce_scatter");
  f->set_intra_node_busbw_gbps(0.4);
  f->set_intra_node_latency_us(30);
  const Cluster c = cluster_of(t);
  EXPECT_EQ(c.intra_for(Collective::kReduceScatter).busbw_gbps, 0.4);
  EXPECT_EQ(c.intra_for(Collective::kAllGather).busbw_gbps, 1.0);  // no fit: from all_reduce
  const double s = 16e6;
  // reduce_scatter: (n-1)/n S / 0.4 GB/s + (n-1) 30 us
  EXPECT_NEAR(collective_cost(Collective::kReduceScatter, Algorithm::kRing, s, c).total_s(), 0.5 * s / 0.4e9 + 30e-6,
              1e-12);
  for (Collective op : {Collective::kAllReduce, Collective::kAllGather})
    EXPECT_DOUBLE_EQ(collective_cost(op, Algorithm::kRing, s, c).total_s(),
                     collective_cost(op, Algorithm::kRing, s, before).total_s());
  // Hierarchical on 2 nodes x 2: the intra reduce-scatter phase of an all_reduce uses the fit too.
  topology::Topology two = tiny_topology(2, 2, topology::LINK_NVLINK, 100, 10);
  const Cluster h0 = cluster_of(two);
  auto* g = two.add_collective_fits();
  g->set_op("all_gather");
  g->set_intra_node_busbw_gbps(50);
  g->set_intra_node_latency_us(4);
  g->set_inter_node_busbw_gbps(2);
  g->set_inter_node_latency_us(20);
  const Cluster h = cluster_of(two);
  EXPECT_EQ(h.inter_for(Collective::kAllGather).busbw_gbps, 2);
  EXPECT_EQ(h.inter_for(Collective::kAllGather).kind, topology::LINK_NETWORK);
  EXPECT_NEAR(collective_cost(Collective::kAllGather, Algorithm::kRing, s, h).total_s(), 0.75 * s / 2e9 + 3 * 20e-6,
              1e-12);
  EXPECT_NEAR(collective_cost(Collective::kAllGather, Algorithm::kHierarchical, s, h).total_s(),
              (0.5 * s / 2e9 + 20e-6) + (0.5 * s / 50e9 + 4e-6), 1e-12);
  EXPECT_NEAR(collective_cost(Collective::kAllReduce, Algorithm::kHierarchical, s, h).total_s() -
                  collective_cost(Collective::kAllReduce, Algorithm::kHierarchical, s, h0).total_s(),
              ring_cost(Collective::kAllGather, 2, s, link(50, 4)).total_s() -
                  ring_cost(Collective::kAllGather, 2, s, h0.intra).total_s(),
              1e-12);
  // Presets carry no fits: unchanged.
  const Cluster p = cluster_of(topology::preset_topology("2x8xh100-sxm-4x200g-ib"));
  EXPECT_EQ(p.intra_for(Collective::kReduceScatter).busbw_gbps, p.intra.busbw_gbps);
  EXPECT_EQ(p.inter_for(Collective::kAllGather).busbw_gbps, p.inter.busbw_gbps);
}

TEST(ClusterOf, RestrictsAndReplicates) {
  const topology::Topology one = tiny_topology(1, 8, topology::LINK_NVLINK, 450, 0);
  Cluster c = cluster_of(one, 4);
  EXPECT_EQ(c.ranks, 4);
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.ranks_per_node, 4);
  c = cluster_of(one, 32);  // four nodes joined by the assumed default network
  EXPECT_EQ(c.nodes, 4);
  EXPECT_EQ(c.ranks_per_node, 8);
  EXPECT_TRUE(c.inter_extrapolated);
  EXPECT_EQ(c.inter.busbw_gbps, kDefaultInterNodeGbps);
  const topology::Topology two = tiny_topology(2, 8, topology::LINK_NVLINK, 450, 50);
  c = cluster_of(two, 64);  // replicated with the topology's own network
  EXPECT_EQ(c.nodes, 8);
  EXPECT_FALSE(c.inter_extrapolated);
  EXPECT_EQ(c.inter.busbw_gbps, 50);
}

TEST(ClusterOf, HostStagedOrUnverifiedLinksAreNotP2p) {
  EXPECT_FALSE(cluster_of(tiny_topology(1, 8, topology::LINK_HOST, 25, 0)).p2p_verified);
  topology::Topology probed = tiny_topology(1, 8, topology::LINK_PCIE, 25, 0);
  probed.set_source("probe");  // links not p2p_verified and the probe did not confirm them
  EXPECT_FALSE(cluster_of(probed).p2p_verified);
  for (auto& l : *probed.mutable_links()) l.set_p2p_verified(true);
  EXPECT_TRUE(cluster_of(probed).p2p_verified);
}

TEST(ClusterOf, Presets) {
  const Cluster pcie = cluster_of(topology::preset_topology("8x4090-pcie"));
  EXPECT_EQ(pcie.ranks, 8);
  EXPECT_FALSE(pcie.p2p_verified);
  EXPECT_LT(pcie.intra.busbw_gbps, 30);
  const Cluster nvlink = cluster_of(topology::preset_topology("8xh100-sxm"));
  EXPECT_TRUE(nvlink.p2p_verified);
  EXPECT_GT(nvlink.intra.busbw_gbps, 300);
  const Cluster ib = cluster_of(topology::preset_topology("2x8xh100-sxm-4x200g-ib"));
  EXPECT_EQ(ib.nodes, 2);
  EXPECT_EQ(ib.ranks, 16);
  EXPECT_GT(ib.inter.busbw_gbps, 50);
}

}  // namespace
}  // namespace tt::cost
