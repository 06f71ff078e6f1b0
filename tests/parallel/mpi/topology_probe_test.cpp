// The topology probe across MPI ranks (test_mpi runs under mpirun -np 2/3/4): every rank takes part
// and gets the same Topology, ranks are placed on their nodes, and the all-reduce measurements and
// the fitted figures are filled in.
#include <gtest/gtest.h>

#include <string>

#include "parallel/topology/probe.h"
#include "tests/parallel/mpi/mpi_test_env.h"

namespace tt::topology {
namespace {

using test::mpi_comm;

TEST(TopologyProbeMpi, EveryRankGetsTheSameTopology) {
  parallel::Communicator& c = mpi_comm();
  ProbeOptions opts;
  opts.sizes = {4096, int64_t(1) << 20};
  opts.iters = 2;
  opts.probe_gpus = false;  // CPU ranks: GPUs (if any) would make this a different test
  opts.codec_elements = 1 << 16;
  const Topology t = probe_topology(c, opts);

  std::string mine;
  t.SerializeToString(&mine);
  int32_t len = int32_t(mine.size());
  c.broadcast(&len, 1, DType::kI32, 0)->wait();
  std::string root(size_t(len), '\0');
  if (c.rank() == 0) root = mine;
  c.broadcast(root.data(), len, DType::kI8, 0)->wait();
  EXPECT_EQ(root, mine) << "rank " << c.rank() << " got a different topology";

  EXPECT_EQ(t.nodes_size(), c.num_nodes());
  int placed = 0;
  bool found_me = false;
  for (int n = 0; n < t.nodes_size(); ++n)
    for (int r : t.nodes(n).ranks()) {
      ++placed;
      if (r == c.rank()) found_me = n == c.node();
    }
  EXPECT_EQ(placed, c.size());
  EXPECT_TRUE(found_me);

  ASSERT_EQ(t.measurements_size(), 6);  // 2 sizes x all_reduce, reduce_scatter, all_gather
  for (const CollectiveMeasurement& m : t.measurements()) {
    EXPECT_EQ(m.ranks(), c.size());
    EXPECT_EQ(m.backend(), "mpi");
    EXPECT_GT(m.time_us(), 0);
    EXPECT_GT(m.bus_bandwidth_gbps(), 0);
    // Calibrated through the calls the trainer issues (ZeRO buckets and parameter gather: _v).
    EXPECT_EQ(m.call(), m.op() == "all_reduce" ? std::string("all_reduce") : m.op() + "_v");
  }
  // The CPU codec's throughput, the slowest rank's, for every payload.
  ASSERT_EQ(t.codec_size(), 3);
  EXPECT_EQ(t.codec(0).payload(), "bf16");
  EXPECT_EQ(t.codec(1).payload(), "int8");
  EXPECT_EQ(t.codec(2).payload(), "fp8");
  for (const CodecMeasurement& m : t.codec()) {
    EXPECT_GT(m.compress_gbps(), 0);
    EXPECT_GT(m.decompress_add_gbps(), 0);
    EXPECT_EQ(m.elements(), uint64_t(1) << 16);
  }
  if (c.size() > 1) EXPECT_EQ(t.collective_fits_size(), 2);
  if (c.num_nodes() == 1) {
    EXPECT_GT(t.intra_node_busbw_gbps(), 0);
    ASSERT_EQ(t.links_size(), 1);
    EXPECT_EQ(t.links(0).kind(), LINK_SHM);
    EXPECT_TRUE(t.links(0).measured());
    EXPECT_EQ(t.ranks_per_node(), c.size());
  } else {
    EXPECT_GT(t.inter_node_busbw_gbps(), 0);
  }
}

}  // namespace
}  // namespace tt::topology
