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

#include "tests/test_util.h"

namespace tt::test {
namespace {

namespace fs = std::filesystem;

std::string scripts_dir() { return source_dir() + "/tests/parallel/ddp"; }

std::map<int, double> losses_in(const std::string& metrics_path) {
  std::map<int, double> out;
  std::ifstream f(metrics_path);
  std::string line;
  const std::regex step_re("\"step\":(\\d+)"), loss_re("\"loss\":([^,}]+)");
  while (std::getline(f, line)) {
    std::smatch s, l;
    if (std::regex_search(line, s, step_re) && std::regex_search(line, l, loss_re))
      out[std::stoi(s[1])] = std::stod(l[1]);
  }
  return out;
}

// Removes ttns<pid>a/b namespaces whose creating test process is gone.
void sweep_stale_namespaces() {
  const auto r = run_command("ip netns list");
  std::istringstream lines(r.output);
  std::string line;
  const std::regex name_re("^ttns(\\d+)[ab]\\b.*");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, name_re)) continue;
    const pid_t pid = pid_t(std::stol(m[1]));
    if (pid == getpid() || kill(pid, 0) == 0) continue;
    run_command("ip netns del " + line.substr(0, line.find(' ')));
  }
}

// The two hosts; torn down on destruction, whatever happened in between.
class TwoHostNetwork {
 public:
  TwoHostNetwork() : tag_("ttns" + std::to_string(getpid())), subnet_("10.231." + std::to_string(getpid() % 250 + 1)) {}
  ~TwoHostNetwork() {
    if (up_) run_command("sh " + scripts_dir() + "/netns_setup.sh down " + tag_);
  }
  TwoHostNetwork(const TwoHostNetwork&) = delete;
  TwoHostNetwork& operator=(const TwoHostNetwork&) = delete;

  CommandResult up() {
    up_ = true;  // the script cleans up after itself on failure; down is idempotent anyway
    return run_command("sh " + scripts_dir() + "/netns_setup.sh up " + tag_ + " " + subnet_);
  }
  std::string ns(char host) const { return tag_ + host; }
  std::string ip(char host) const { return subnet_ + (host == 'a' ? ".1" : ".2"); }
  std::string cidr() const { return subnet_ + ".0/24"; }
  std::string veth(char host) const { return tag_ + "v" + host; }
  // Bytes host `host` has sent over its end of the link.
  long long tx_bytes(char host) const {
    const auto r = run_command("ip netns exec " + ns(host) + " cat /sys/class/net/" + veth(host) + "/statistics/tx_bytes");
    return r.exit_code == 0 ? std::atoll(r.output.c_str()) : -1;
  }

 private:
  std::string tag_, subnet_;
  bool up_ = false;
};

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
    sweep_stale_namespaces();
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
    return "TT_NETNS_HOSTS='" + net.ip('a') + "=" + net.ns('a') + " " + net.ip('b') + "=" + net.ns('b') + "'" +
           " TT_NETNS_LOG=" + dir_.file("rsh.log") + " timeout 120 ip netns exec " + net.ns('a') + " " + TT_MPIRUN +
           " -np 2 --host " + net.ip('a') + ":1," + net.ip('b') + ":1" +
           " --mca plm_rsh_agent " + scripts_dir() + "/netns_rsh.sh" +
           " --mca btl tcp,self --mca btl_tcp_if_include " + net.cidr() + " --mca oob_tcp_if_include " + net.cidr() +
           " " + train_args(run_dir);
  }

  static constexpr int kSteps = 40;
  TempDir dir_;
};

TEST_F(DdpNetns, TwoHostRunMatchesOneProcessWithGradAccumulation) {
  TwoHostNetwork net;
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

  const auto a = losses_in(dir_.file("two/metrics.jsonl"));
  const auto b = losses_in(dir_.file("one/metrics.jsonl"));
  ASSERT_EQ(a.size(), size_t(kSteps));
  ASSERT_EQ(b.size(), size_t(kSteps));
  for (const auto& [step, loss] : a) {
    ASSERT_TRUE(b.count(step)) << "step " << step;
    EXPECT_LE(std::fabs(loss - b.at(step)), 1e-5 * std::fabs(b.at(step)))
        << "step " << step << ": 2 hosts " << loss << " vs 1 process, grad_accum_steps=2 " << b.at(step);
  }
}

}  // namespace
}  // namespace tt::test
