// The probe on this machine with the single-rank communicator (CI has no GPU: the CUDA part must
// report zero GPUs cleanly), and the alpha-beta fit on data.
#include "parallel/topology/probe.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "parallel/comm/local/local_communicator.h"
#include "parallel/ddp/sharding.h"
#include "parallel/topology/codec_probe.h"
#include "parallel/topology/probe_cuda.h"
#include "parallel/topology/topology_io.h"
#include "tests/test_util.h"

namespace tt::topology {
namespace {

CollectiveMeasurement measurement(uint64_t bytes, int ranks, double time_us, const std::string& op = "all_reduce") {
  CollectiveMeasurement m;
  m.set_op(op);
  m.set_bytes(bytes);
  m.set_ranks(ranks);
  m.set_time_us(time_us);
  m.set_bus_bandwidth_gbps(double(bytes) * bus_factor(op, ranks) / (time_us * 1e3));
  return m;
}

TEST(Probe, BusFactor) {
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(1), 0);
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(2), 1);
  EXPECT_DOUBLE_EQ(all_reduce_bus_factor(8), 1.75);
}

TEST(Probe, AlphaBetaFitRecoversAModel) {
  // t(S) = 20 us + S * 1.75 / (10 GB/s): 20 us over 2(8-1) = 14 ring steps
  auto t_us = [](double bytes) { return 20 + bytes * 1.75 / 10e3; };
  std::vector<CollectiveMeasurement> ms;
  for (uint64_t s : {uint64_t(16) << 20, uint64_t(64) << 10, uint64_t(1) << 20})
    ms.push_back(measurement(s, 8, t_us(double(s))));
  const AlphaBeta fit = fit_all_reduce(ms);
  // beta from the largest size includes its share of alpha: slightly under 10 GB/s.
  EXPECT_NEAR(fit.busbw_gbps, 10, 0.1);
  EXPECT_NEAR(fit.latency_us, 20.0 / 14, 0.1);
  EXPECT_EQ(fit_all_reduce({}).busbw_gbps, 0);
  EXPECT_EQ(fit_all_reduce({measurement(1024, 1, 1.0)}).busbw_gbps, 0);  // one rank: nothing moved
}

TEST(Probe, PerCollectiveFitUsesThatCollectivesRing) {
  EXPECT_DOUBLE_EQ(bus_factor("reduce_scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor("all_gather", 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 2), 1);
  // reduce_scatter: t(S) = 7 x 3 us + S * 7/8 / (4 GB/s); all_gather: 7 x 1 us + S * 7/8 / (6 GB/s);
  // all_reduce (in the same list) at 10 GB/s must not leak into either fit.
  std::vector<CollectiveMeasurement> ms;
  for (uint64_t s : {uint64_t(4) << 10, uint64_t(16) << 20}) {
    ms.push_back(measurement(s, 8, 20 + double(s) * 1.75 / 10e3, "all_reduce"));
    ms.push_back(measurement(s, 8, 21 + double(s) * 0.875 / 4e3, "reduce_scatter"));
    ms.push_back(measurement(s, 8, 7 + double(s) * 0.875 / 6e3, "all_gather"));
  }
  const AlphaBeta rs = fit_collective(ms, "reduce_scatter"), ag = fit_collective(ms, "all_gather");
  EXPECT_NEAR(rs.busbw_gbps, 4, 0.05);  // beta from the largest size includes its share of alpha
  EXPECT_NEAR(rs.latency_us, 3, 0.1);
  EXPECT_NEAR(ag.busbw_gbps, 6, 0.05);
  EXPECT_NEAR(ag.latency_us, 1, 0.1);
  EXPECT_NEAR(fit_all_reduce(ms).busbw_gbps, 10, 0.1);
  EXPECT_EQ(fit_collective(ms, "broadcast").busbw_gbps, 0);  // not measured
}

TEST(ProbeAssemble, CpuRanksOnOneNodeGetIntraNodeFitsPerCollective) {
  NodeProbe a;
  a.hostname = "a";
  const Topology t =
      assemble_topology({node_fragment(a, "/nonexistent")}, {0, 0},
                        {measurement(4096, 2, 40), measurement(1 << 24, 2, 1e4),
                         measurement(4096, 2, 30, "reduce_scatter"), measurement(1 << 24, 2, 2e4, "reduce_scatter"),
                         measurement(4096, 2, 20, "all_gather"), measurement(1 << 24, 2, 1.5e4, "all_gather")});
  EXPECT_NEAR(t.intra_node_busbw_gbps(), (1 << 24) / 1e7, 1e-6);
  ASSERT_EQ(t.collective_fits_size(), 2);
  EXPECT_EQ(t.collective_fits(0).op(), "reduce_scatter");
  EXPECT_NEAR(t.collective_fits(0).intra_node_busbw_gbps(), (1 << 24) * 0.5 / 2e7, 1e-6);
  EXPECT_GT(t.collective_fits(0).intra_node_latency_us(), 0);
  EXPECT_EQ(t.collective_fits(0).inter_node_busbw_gbps(), 0);
  EXPECT_EQ(t.collective_fits(1).op(), "all_gather");
  EXPECT_NEAR(t.collective_fits(1).intra_node_busbw_gbps(), (1 << 24) * 0.5 / 1.5e7, 1e-6);
  EXPECT_NO_THROW(validate_topology(t, "test"));
  EXPECT_NE(describe_topology(t).find("reduce_scatter busbw: intra-node"), std::string::npos) << describe_topology(t);
  // all_reduce only (an older probe, or ops = {"all_reduce"}): no fits.
  EXPECT_EQ(assemble_topology({node_fragment(a, "/x")}, {0, 0}, {measurement(4096, 2, 40)}).collective_fits_size(), 0);
}

TEST(Probe, CudaPartFindsNoGpuHereWithoutFailing) {
  const CudaReport r = probe_cuda(1 << 20, 1);
  if (!r.devices.empty()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_TRUE(r.pairs.empty());
  EXPECT_FALSE(r.note.empty());
}

TEST(Probe, CpuRanksUnderTheLocalCommunicator) {
  parallel::LocalCommunicator comm;
  ProbeOptions opts;
  opts.sizes = {4096, 65536};
  opts.iters = 2;
  const Topology t = probe_topology(comm, opts);
  EXPECT_EQ(t.source(), "probe");
  EXPECT_EQ(t.name().rfind("probed on ", 0), 0u);
  ASSERT_EQ(t.nodes_size(), 1);
  EXPECT_FALSE(t.nodes(0).hostname().empty());
  EXPECT_EQ(t.nodes(0).ranks_size(), 1);
  EXPECT_EQ(t.nodes(0).ranks(0), 0);
  EXPECT_GT(t.nodes(0).cpu_cores(), 0);
  EXPECT_EQ(t.ranks_per_node(), 1);
  ASSERT_EQ(t.measurements_size(), 6);  // 2 sizes x all_reduce, reduce_scatter, all_gather
  EXPECT_EQ(t.measurements(0).op(), "all_reduce");
  EXPECT_EQ(t.measurements(0).bytes(), 4096u);
  EXPECT_EQ(t.measurements(1).bytes(), 65536u);
  EXPECT_EQ(t.measurements(2).op(), "reduce_scatter");
  EXPECT_EQ(t.measurements(4).op(), "all_gather");
  EXPECT_EQ(t.measurements(5).bytes(), 65536u);
  EXPECT_EQ(t.collective_fits_size(), 0);  // one rank moves nothing: no fit
  EXPECT_EQ(t.measurements(0).ranks(), 1);
  EXPECT_EQ(t.measurements(0).backend(), "local");
  EXPECT_GE(t.measurements(0).time_us(), 0);
  EXPECT_EQ(t.measurements(0).bus_bandwidth_gbps(), 0);  // one rank moves nothing
  EXPECT_NO_THROW(validate_topology(t, "probe"));
  if (t.gpus_per_node() == 0) {
    for (const Link& l : t.links()) EXPECT_NE(l.kind(), LINK_NETWORK);
    EXPECT_EQ(t.links_size(), 0);  // one rank: no shared-memory link
    EXPECT_FALSE(t.p2p_all_verified());
  }
  const std::string d = describe_topology(t);
  EXPECT_NE(d.find("through the local communicator"), std::string::npos) << d;
  // Without GPUs the CPU codec is timed (the default buffer; both payloads).
  if (t.gpus_per_node() == 0) {
    ASSERT_EQ(t.codec_size(), 3);
    EXPECT_GT(t.codec(1).compress_gbps(), 0);
    EXPECT_NE(d.find("codec int8 (CPU"), std::string::npos) << d;
  }
}

// Records which Communicator calls the probe makes and with which counts.
class RecordingCommunicator : public parallel::LocalCommunicator {
 public:
  std::vector<std::string> calls;
  std::vector<std::vector<int64_t>> counts;
  int size() const override { return size_; }
  int rank() const override { return 1; }
  std::shared_ptr<parallel::Work> reduce_scatter(const void*, void*, int64_t, DType, parallel::ReduceOp) override {
    calls.push_back("reduce_scatter");
    return LocalCommunicator::barrier();
  }
  std::shared_ptr<parallel::Work> all_gather(const void*, void*, int64_t, DType) override {
    calls.push_back("all_gather");
    return LocalCommunicator::barrier();
  }
  std::shared_ptr<parallel::Work> reduce_scatter_v(const void*, void*, const std::vector<int64_t>& c, DType,
                                                   parallel::ReduceOp) override {
    calls.push_back("reduce_scatter_v");
    counts.push_back(c);
    return LocalCommunicator::barrier();
  }
  std::shared_ptr<parallel::Work> all_gather_v(const void*, void*, const std::vector<int64_t>& c, DType) override {
    calls.push_back("all_gather_v");
    counts.push_back(c);
    return LocalCommunicator::barrier();
  }
  int size_ = 4;
};

// The probe times reduce-scatter and all-gather through the calls the trainer issues: the _v
// variants with ZeRO shard counts (on MPI: one MPI_Ireduce per root / MPI_Iallgatherv), not the block ones.
TEST(Probe, CalibratesReduceScatterAndAllGatherThroughTheTrainersVariants) {
  RecordingCommunicator comm;
  ProbeOptions opts;
  opts.sizes = {4000, 1 << 20};
  opts.iters = 2;
  opts.warmup = 1;
  const std::vector<CollectiveMeasurement> ms = measure_collectives(comm, opts);
  ASSERT_EQ(ms.size(), 6u);
  for (const CollectiveMeasurement& m : ms)
    EXPECT_EQ(m.call(), m.op() == "all_reduce" ? std::string("all_reduce") : m.op() + "_v") << m.op();
  for (const std::string& c : comm.calls) EXPECT_TRUE(c == "reduce_scatter_v" || c == "all_gather_v") << c;
  ASSERT_EQ(comm.calls.size(), 2u * 2u * 3u);  // 2 ops x 2 sizes x (1 warm-up + 2 timed)
  // 4000 bytes = 1000 elements over 4 ranks: shard sizes, multiples of 16 elements as the trainer's.
  EXPECT_EQ(comm.counts.front(), parallel::shard_sizes(1000, 4));
  EXPECT_EQ(ms[2].bytes(), 4000u);  // the whole buffer, not rounded to a multiple of the ranks
}

TEST(Probe, CodecMeasurementOnThisMachine) {
  const CodecMeasurement m = measure_codec(parallel::GradCompression::kInt8, 1 << 16, 2);
  EXPECT_EQ(m.payload(), "int8");
  EXPECT_GT(m.compress_gbps(), 0);
  EXPECT_GT(m.decompress_add_gbps(), 0);
  EXPECT_EQ(m.elements(), uint64_t(1) << 16);
  EXPECT_GE(m.threads(), 1);
}

TEST(Probe, FixtureSysfsRootIsUsedForTheHost) {
  parallel::LocalCommunicator comm;
  ProbeOptions opts;
  opts.sizes = {4096};
  opts.iters = 1;
  opts.probe_gpus = false;
  opts.sysfs_root = std::string(TT_SOURCE_DIR) + "/tests/fixtures/topology/sysfs-h100";
  const Topology t = probe_topology(comm, opts);
  EXPECT_EQ(t.nodes(0).cpu_cores(), 224);
  EXPECT_EQ(t.nodes(0).numa_nodes(), 2);
  EXPECT_EQ(t.gpus_per_node(), 0);
}

TEST(Probe, BadOptionsAreConfigErrors) {
  parallel::LocalCommunicator comm;
  ProbeOptions opts;
  opts.sizes = {};
  EXPECT_THROW(probe_topology(comm, opts), Error);
  opts.sizes = {2};
  EXPECT_THROW(probe_topology(comm, opts), Error);
  opts.sizes = {4096};
  opts.iters = 0;
  EXPECT_THROW(probe_topology(comm, opts), Error);
}

// ---- GPU and multi-node cases on data: what the CUDA/NVML halves would report on real machines ----

std::string fixture(const std::string& name) { return test::source_dir() + "/tests/fixtures/topology/" + name; }

CudaDeviceReport device(int index, const std::string& name, const std::string& bus, int cc) {
  CudaDeviceReport d;
  d.index = index;
  d.name = name;
  d.pci_bus_id = bus;
  d.compute_capability = cc;
  d.memory_bytes = uint64_t(24) << 30;
  d.host_to_device_gbps = 24.5;
  d.device_to_host_gbps = 26.0;
  return d;
}

CudaPairReport pair(int a, int b, bool peer, bool ok, double gbps, const std::string& problem = "") {
  CudaPairReport p;
  p.a = a;
  p.b = b;
  p.peer_access = peer;
  p.content_ok = ok;
  p.gbps = gbps;
  p.problem = problem;
  return p;
}

NodeProbe rtx4090_node(const std::string& host) {
  NodeProbe p;
  p.hostname = host;
  p.host = {32, 1};
  p.cuda.devices = {device(0, "NVIDIA GeForce RTX 4090", "0000:01:00.0", 89),
                    device(1, "NVIDIA GeForce RTX 4090", "0000:41:00.0", 89)};
  p.cuda.pairs = {pair(0, 1, false, true, 11.5, "cudaDeviceCanAccessPeer: no P2P between these GPUs")};
  p.nvlinks.note = "NVML (libnvidia-ml.so.1) not found: no NVLink information";
  return p;
}

TEST(ProbeFragment, Rtx4090WithoutP2PGoesThroughHost) {
  const Topology f = node_fragment(rtx4090_node("ws"), fixture("sysfs-4090"));
  ASSERT_EQ(f.nodes_size(), 1);
  const Node& n = f.nodes(0);
  EXPECT_EQ(n.hostname(), "ws");
  EXPECT_EQ(n.cpu_cores(), 32);
  ASSERT_EQ(n.gpus_size(), 2);
  EXPECT_EQ(n.gpus(0).pci_bus_id(), "0000:01:00.0");
  EXPECT_EQ(n.gpus(0).peak_bf16_tflops(), 165);
  EXPECT_EQ(n.gpus(0).pcie_gen(), 1);  // the fixture's idle GPU
  EXPECT_EQ(n.gpus(0).pcie_max_gen(), 4);
  EXPECT_EQ(n.gpus(1).pcie_width(), 8);
  EXPECT_EQ(n.gpus(1).numa_node(), -1);
  EXPECT_EQ(n.gpus(1).local_cpulist(), "0-31");
  ASSERT_EQ(f.links_size(), 1);
  EXPECT_EQ(f.links(0).kind(), LINK_HOST);
  EXPECT_FALSE(f.links(0).p2p_verified());
  EXPECT_TRUE(f.links(0).measured());
  EXPECT_DOUBLE_EQ(f.links(0).bandwidth_gbps(), 11.5);
  std::string notes;
  for (const std::string& s : f.notes()) notes += s + "\n";
  EXPECT_NE(notes.find("no P2P between 1 of 1 GPU pair(s)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("NVML"), std::string::npos);
}

TEST(ProbeFragment, CorruptedP2PIsNotVerifiedAndNamed) {
  NodeProbe p = rtx4090_node("ws");
  p.cuda.pairs = {pair(0, 1, true, false, 20.0, "P2P copies arrived corrupted")};
  const Topology f = node_fragment(p, fixture("sysfs-4090"));
  EXPECT_EQ(f.links(0).kind(), LINK_HOST);
  EXPECT_FALSE(f.links(0).p2p_verified());
  bool named = false;
  for (const std::string& s : f.notes())
    named = named || (s.find("GPU 0 <-> GPU 1: P2P copies arrived corrupted") != std::string::npos &&
                      s.find("NCCL_P2P_DISABLE=1") != std::string::npos);
  EXPECT_TRUE(named);
}

TEST(ProbeFragment, H100NvLinkFromRecordedNvml) {
  // GPUs 0 and 4 of the recorded HGX H100 (sysfs-h100 has exactly those two), P2P verified.
  std::vector<std::string> bus;
  std::vector<NvLinkRecord> recs;
  parse_nvlink_records(test::read_file(fixture("nvml-hgx-h100.txt")), "nvml-hgx-h100.txt", &bus, &recs);
  NodeProbe p;
  p.hostname = "hgx";
  p.host = {224, 2};
  p.cuda.devices = {device(0, "NVIDIA H100 80GB HBM3", "0000:1B:00.0", 90),
                    device(1, "NVIDIA H100 80GB HBM3", "0000:9D:00.0", 90)};
  p.cuda.pairs = {pair(0, 1, true, true, 0)};  // bandwidth not measured: the nominal NVLink width is used
  p.nvlinks.available = true;
  for (NvLinkRecord r : recs)
    if (r.gpu == 0 || r.gpu == 4) {
      r.gpu = r.gpu == 0 ? 0 : 1;
      p.nvlinks.records.push_back(r);
    }
  const Topology f = node_fragment(p, fixture("sysfs-h100"));
  ASSERT_EQ(f.links_size(), 1);
  EXPECT_EQ(f.links(0).kind(), LINK_NVLINK);
  EXPECT_TRUE(f.links(0).p2p_verified());
  EXPECT_FALSE(f.links(0).measured());
  EXPECT_DOUBLE_EQ(f.links(0).bandwidth_gbps(), 450);
  EXPECT_EQ(f.nodes(0).gpus(0).numa_node(), 0);
  EXPECT_EQ(f.nodes(0).gpus(1).numa_node(), 1);
  EXPECT_EQ(f.nodes(0).gpus(1).pcie_gen(), 5);
  EXPECT_EQ(f.notes_size(), 0);
}

TEST(ProbeAssemble, TwoGpuNodesOverANetwork) {
  const std::vector<Topology> frags = {node_fragment(rtx4090_node("a"), fixture("sysfs-4090")),
                                       node_fragment(rtx4090_node("b"), fixture("sysfs-4090"))};
  const std::vector<int> node_of = {0, 0, 1, 1};
  const Topology t =
      assemble_topology(frags, node_of, {measurement(64 << 10, 4, 150), measurement(16 << 20, 4, 20000)});
  EXPECT_NO_THROW(validate_topology(t, "assembled"));
  EXPECT_EQ(t.name(), "probed on a and 1 more node(s)");
  ASSERT_EQ(t.nodes_size(), 2);
  EXPECT_EQ(t.nodes(1).ranks(0), 2);
  EXPECT_EQ(t.gpus_per_node(), 2);
  EXPECT_EQ(t.ranks_per_node(), 2);
  EXPECT_FALSE(t.p2p_all_verified());
  EXPECT_DOUBLE_EQ(t.intra_node_busbw_gbps(), 11.5);  // the ring's slowest copy
  EXPECT_GT(t.inter_node_busbw_gbps(), 0);
  EXPECT_LT(t.inter_node_busbw_gbps(), 2);
  int network = 0, host = 0;
  for (const Link& l : t.links()) {
    network += l.kind() == LINK_NETWORK;
    host += l.kind() == LINK_HOST;
    if (l.kind() == LINK_HOST) EXPECT_EQ(l.node_a(), l.node_b());
  }
  EXPECT_EQ(network, 1);
  EXPECT_EQ(host, 2);
  const std::string d = describe_topology(t);
  EXPECT_NE(d.find("NCCL_P2P_DISABLE=1 recommended"), std::string::npos) << d;
  EXPECT_NE(d.find("a: no P2P between"), std::string::npos) << d;
  EXPECT_NE(d.find("nodes 1-1: same as node 0"), std::string::npos) << d;
}

TEST(ProbeAssemble, CpuRanksOnTwoNodes) {
  NodeProbe a, b;
  a.hostname = "a";
  b.hostname = "b";
  const Topology t = assemble_topology({node_fragment(a, "/nonexistent"), node_fragment(b, "/nonexistent")},
                                       {0, 1, 0, 1}, {measurement(4096, 4, 40), measurement(1 << 20, 4, 900)});
  EXPECT_EQ(t.gpus_per_node(), 0);
  EXPECT_EQ(t.nodes(0).ranks_size(), 2);
  EXPECT_EQ(t.nodes(0).ranks(1), 2);
  EXPECT_EQ(t.intra_node_busbw_gbps(), 0);
  EXPECT_GT(t.inter_node_busbw_gbps(), 0);
  EXPECT_EQ(t.collective_fits_size(), 0);  // only all_reduce measured
  const Topology f =
      assemble_topology({node_fragment(a, "/nonexistent"), node_fragment(b, "/nonexistent")}, {0, 1, 0, 1},
                        {measurement(4096, 4, 40), measurement(1 << 20, 4, 900), measurement(4096, 4, 50, "all_gather"),
                         measurement(1 << 20, 4, 1500, "all_gather")});
  ASSERT_EQ(f.collective_fits_size(), 1);
  EXPECT_EQ(f.collective_fits(0).op(), "all_gather");
  EXPECT_EQ(f.collective_fits(0).intra_node_busbw_gbps(), 0);
  EXPECT_NEAR(f.collective_fits(0).inter_node_busbw_gbps(), (1 << 20) * 0.75 / 1.5e6, 1e-6);
  int shm = 0;
  for (const Link& l : t.links())
    if (l.kind() == LINK_SHM) {
      ++shm;
      EXPECT_FALSE(l.measured());
    } else {
      EXPECT_EQ(l.kind(), LINK_NETWORK);
      EXPECT_TRUE(l.measured());
    }
  EXPECT_EQ(shm, 2);

  // With the nodes' own all-reduce timed on node sub-communicators, the intra-node figures and the
  // shared-memory links are measured too.
  CollectiveMeasurement small = measurement(4096, 2, 10), large = measurement(1 << 20, 2, 200);
  small.set_scope("intra_node");
  large.set_scope("intra_node");
  const Topology m =
      assemble_topology({node_fragment(a, "/nonexistent"), node_fragment(b, "/nonexistent")}, {0, 1, 0, 1},
                        {measurement(4096, 4, 40), measurement(1 << 20, 4, 900)}, {small, large});
  EXPECT_NEAR(m.intra_node_busbw_gbps(), (1 << 20) * 1.0 / 200e3, 1e-9);  // 2 ranks: bus factor 1
  EXPECT_GT(m.inter_node_busbw_gbps(), 0);
  EXPECT_EQ(m.measurements_size(), 4);
  for (const Link& l : m.links())
    if (l.kind() == LINK_SHM) {
      EXPECT_TRUE(l.measured());
      EXPECT_NEAR(l.bandwidth_gbps(), m.intra_node_busbw_gbps(), 1e-12);
    }
  for (const std::string& note : m.notes()) EXPECT_EQ(note.find("not measured"), std::string::npos) << note;
  EXPECT_NE(describe_topology(m).find("(intra_node)"), std::string::npos);
  EXPECT_THROW(assemble_topology({}, {}, {}), Error);
  EXPECT_THROW(assemble_topology({node_fragment(a, "/x")}, {0, 1}, {}), Error);
}

}  // namespace
}  // namespace tt::topology
