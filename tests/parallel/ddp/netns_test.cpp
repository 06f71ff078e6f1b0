// Multi-node rehearsal on one machine (label mpi): two network namespaces stand in for two hosts,
// joined by a veth pair on a private /24 (netns_setup.sh); mpirun runs in host a and starts rank 1's
// daemon in host b through an rsh agent (netns_rsh.sh) instead of ssh. The 2-"host" run must see
// 2 nodes, move its gradients over the link, and reproduce a 1-process run with grad_accum_steps=2.
// Skips (with the reason) where network namespaces cannot be created: not root, no CAP_NET_ADMIN,
// no iproute2.
//
// Design: nothing is added to the root namespace (no bridge, address or route), so the test cannot
// collide with the machine's networks and all traffic stays on the veth pair; the namespaces are
// named after this process's pid (ttns<pid>a/b) and removed by an RAII guard, and namespaces left by
// a test process that no longer exists (killed by a ctest timeout) are swept at start.
//
// Working mpirun line (OpenMPI 4.1), as built by `two_host_command` below:
//   TT_NETNS_HOSTS="10.231.S.1=ttns<pid>a 10.231.S.2=ttns<pid>b" ip netns exec ttns<pid>a \
//     mpirun --allow-run-as-root --oversubscribe -np 2 --host 10.231.S.1:1,10.231.S.2:1 \
//       --mca plm_rsh_agent tests/parallel/ddp/netns_rsh.sh \
//       --mca btl tcp,self --mca btl_tcp_if_include 10.231.S.0/24 --mca oob_tcp_if_include 10.231.S.0/24 \
//       topotrain train ...
// (btl tcp,self: the shared-memory BTL would bypass the link, as both "hosts" share one kernel.)
//
// DelayLineAddsTheConfiguredLatency: the latency emulation (netns_setup.sh --delay-ms: a router
// namespace holding every packet in delay_line.cpp behind a TUN device) adds 2x the one-way delay to
// a TCP round trip, and an MPI all-reduce runs through it. Skips without /dev/net/tun.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "tests/parallel/ddp/netns_hosts.h"
#include "tests/test_util.h"

namespace tt::test {
namespace {

namespace fs = std::filesystem;

// Why namespaces cannot be used here, or "" when they can.
std::string netns_unavailable_reason() {
  if (geteuid() != 0) return "needs root (ip netns add)";
  const std::string probe = "ttns" + std::to_string(getpid()) + "probe";
  const auto r = run_command("ip netns add " + probe);
  if (r.exit_code != 0) return "'ip netns add' failed (no CAP_NET_ADMIN or no iproute2?): " + r.output;
  run_command("ip netns del " + probe);
  return "";
}

class DdpNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = netns_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    sweep_stale_namespaces("ttns");
    auto r = run_command(std::string(TT_BINARY) + " data synth --out " + dir_.file("data") +
                         " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 100000 --val-tokens 20000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  std::string train_args(const std::string& run_dir) const {
    return std::string(TT_BINARY) + " train --config " + source_dir() + "/examples/gpt2-tiny-synth.pbtxt" +
           " --set data.train=" + dir_.file("data/train.bin") + " --set data.val=" + dir_.file("data/val.bin") +
           " --set logging.run_dir=" + run_dir + " --set model.vocab_size=16 --set train.batch_size=8" +
           " --set train.threads=1 --set train.log_every=10 --set train.val_every=0 --set optimizer.warmup_steps=5" +
           " --set checkpoint.every=0 --set parallel.timeout_s=30 --set train.steps=" + std::to_string(kSteps);
  }

  std::string two_host_command(const TwoHostNetwork& net, const std::string& run_dir) const {
    return net.mpirun(train_args(run_dir), 120, "TT_NETNS_LOG=" + dir_.file("rsh.log"));
  }

  static constexpr int kSteps = 40;
  TempDir dir_;
};

TEST_F(DdpNetns, TwoHostRunMatchesOneProcessWithGradAccumulation) {
  TwoHostNetwork net("ttns", 231);
  const auto up = net.up();
  ASSERT_EQ(up.exit_code, 0) << "netns_setup.sh up failed:\n" << up.output;
  const long long tx_before = net.tx_bytes('b');
  ASSERT_GE(tx_before, 0);

  const auto two = run_command(two_host_command(net, dir_.file("two")));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_TRUE(two.output.find("data parallel: 2 ranks (mpi, 2 node(s))") != std::string::npos) << two.output;

  // Rank 1's daemon was started in host b by the agent, and the gradients crossed the link: a
  // 2-rank all-reduce makes each rank send at least half the 439 KiB of gradients every step.
  const std::string rsh_log = fs::exists(dir_.file("rsh.log")) ? read_file(dir_.file("rsh.log")) : "";
  EXPECT_TRUE(rsh_log.find(net.ip('b') + " " + net.ns('b')) != std::string::npos) << "agent log:\n" << rsh_log;
  const long long sent_by_b = net.tx_bytes('b') - tx_before;
  EXPECT_GT(sent_by_b, kSteps * 200LL * 1024) << "host b sent only " << sent_by_b << " bytes over the link";

  const auto one = run_command("timeout 120 " + train_args(dir_.file("one")) + " --set train.grad_accum_steps=2");
  ASSERT_EQ(one.exit_code, 0) << one.output;

  const auto a = metric_by_step(dir_.file("two/metrics.jsonl"));
  const auto b = metric_by_step(dir_.file("one/metrics.jsonl"));
  ASSERT_EQ(a.size(), size_t(kSteps));
  ASSERT_EQ(b.size(), size_t(kSteps));
  for (const auto& [step, text] : a) {
    ASSERT_TRUE(b.count(step)) << "step " << step;
    const double loss = std::stod(text), reference = std::stod(b.at(step));
    EXPECT_LE(std::fabs(loss - reference), 1e-5 * std::fabs(reference))
        << "step " << step << ": 2 hosts " << loss << " vs 1 process, grad_accum_steps=2 " << reference;
  }
}

TEST_F(DdpNetns, DelayLineAddsTheConfiguredLatency) {
  const std::string why = delay_line_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  double plain_ms = -1;
  {
    TwoHostNetwork plain("ttns", 231);
    const auto up = plain.up();
    ASSERT_EQ(up.exit_code, 0) << "netns_setup.sh up failed:\n" << up.output;
    plain_ms = plain.tcp_rtt_ms(50);
    ASSERT_GT(plain_ms, 0) << "TCP ping-pong over the plain veth pair failed";
  }
  constexpr double kDelayMs = 1.0;  // one way, each way
  TwoHostNetwork net("ttns", 231);
  const auto up = net.up("1");
  ASSERT_EQ(up.exit_code, 0) << "netns_setup.sh up --delay-ms 1 failed:\n" << up.output;
  const double delayed_ms = net.tcp_rtt_ms(50);
  // A packet is never released early: the round trip is at least 2 delays. The delay line's own
  // overhead (two wake-ups and an extra route per direction) is ~0.1 ms on this machine; 1 ms of
  // slack is for a loaded one.
  EXPECT_GE(delayed_ms, 2 * kDelayMs) << "plain " << plain_ms << " ms";
  EXPECT_LE(delayed_ms, 2 * kDelayMs + 1.0) << "plain " << plain_ms << " ms";
  EXPECT_GT(delayed_ms - plain_ms, 2 * kDelayMs - 0.2) << "plain " << plain_ms << " ms, delayed " << delayed_ms;

  // MPI across the delayed link: a 2-rank all-reduce needs the other rank's data, so it cannot take
  // less than one one-way delay.
  const auto r = run_command(
      net.mpirun(std::string(TT_BINARY) + " bench comm --ops all_reduce --sizes 4K,1M --iters 10 --warmup 2", 60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("all_reduce\\s+4\\.0 KiB\\s+\\d+\\s+([0-9.]+)"))) << r.output;
  const double all_reduce_ms = std::stod(m[1]) / 1e3;
  EXPECT_GE(all_reduce_ms, kDelayMs) << r.output;
  std::printf("TCP round trip: plain %.3f ms, %.1f ms one-way delay %.3f ms; 4 KiB all_reduce %.3f ms\n", plain_ms,
              kDelayMs, delayed_ms, all_reduce_ms);
}

}  // namespace
}  // namespace tt::test
