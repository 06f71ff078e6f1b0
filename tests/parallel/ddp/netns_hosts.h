// Two "hosts" on one machine for the mpi-labelled DDP tests: two network namespaces <tag>a/<tag>b
// joined by a veth pair on a private /24 (netns_setup.sh), mpirun started in host a with an rsh
// agent (netns_rsh.sh) that starts rank 1's daemon in host b. Nothing is added to the root
// namespace; the namespaces are named <prefix><pid>a/b, removed by an RAII guard, and those left by
// test processes that no longer exist are swept by sweep_stale_namespaces.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>

#include "tests/test_util.h"

namespace tt::test {

inline std::string netns_scripts_dir() { return source_dir() + "/tests/parallel/ddp"; }

// Removes <prefix><pid>a/b namespaces whose creating test process is gone.
inline void sweep_stale_namespaces(const std::string& prefix) {
  const auto r = run_command("ip netns list");
  std::istringstream lines(r.output);
  std::string line;
  const std::regex name_re("^" + prefix + "(\\d+)[ab]\\b.*");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, name_re)) continue;
    const pid_t pid = pid_t(std::stol(m[1]));
    if (pid == getpid() || kill(pid, 0) == 0) continue;
    run_command("ip netns del " + line.substr(0, line.find(' ')));
  }
}

// The two hosts, on 10.<net>.<pid % 250 + 1>.0/24; torn down on destruction, whatever happened in
// between.
class TwoHostNetwork {
 public:
  TwoHostNetwork(const std::string& prefix, int net)
      : tag_(prefix + std::to_string(getpid())),
        subnet_("10." + std::to_string(net) + "." + std::to_string(getpid() % 250 + 1)) {}
  ~TwoHostNetwork() {
    if (up_) run_command("sh " + netns_scripts_dir() + "/netns_setup.sh down " + tag_);
  }
  TwoHostNetwork(const TwoHostNetwork&) = delete;
  TwoHostNetwork& operator=(const TwoHostNetwork&) = delete;

  CommandResult up() {
    up_ = true;  // the script cleans up after itself on failure; down is idempotent anyway
    return run_command("sh " + netns_scripts_dir() + "/netns_setup.sh up " + tag_ + " " + subnet_);
  }
  std::string ns(char host) const { return tag_ + host; }
  std::string ip(char host) const { return subnet_ + (host == 'a' ? ".1" : ".2"); }
  std::string cidr() const { return subnet_ + ".0/24"; }
  std::string veth(char host) const { return tag_ + "v" + host; }
  // Bytes host `host` has sent over its end of the link.
  long long tx_bytes(char host) const {
    const auto r =
        run_command("ip netns exec " + ns(host) + " cat /sys/class/net/" + veth(host) + "/statistics/tx_bytes");
    return r.exit_code == 0 ? std::atoll(r.output.c_str()) : -1;
  }
  // tbf on both ends of the link.
  CommandResult shape(const std::string& rate, const std::string& burst) const {
    std::string out;
    for (const char h : {'a', 'b'}) {
      auto r = run_command("ip netns exec " + ns(h) + " tc qdisc replace dev " + veth(h) + " root tbf rate " + rate +
                           " burst " + burst + " latency 20ms");
      if (r.exit_code != 0) return r;
      out += r.output;
    }
    return {0, out};
  }
  // `args` under mpirun, one rank per host, over the link only (btl tcp,self: the shared-memory BTL
  // would bypass it, as both "hosts" share one kernel). `env` is prepended as extra VAR=value words.
  std::string mpirun(const std::string& args, int timeout_s = 60, const std::string& env = "") const {
    return "TT_NETNS_HOSTS='" + ip('a') + "=" + ns('a') + " " + ip('b') + "=" + ns('b') + "'" +
           (env.empty() ? "" : " " + env) + " timeout " + std::to_string(timeout_s) + " ip netns exec " + ns('a') +
           " " + TT_MPIRUN + " -np 2 --host " + ip('a') + ":1," + ip('b') + ":1" + " --mca plm_rsh_agent " +
           netns_scripts_dir() + "/netns_rsh.sh" + " --mca btl tcp,self --mca btl_tcp_if_include " + cidr() +
           " --mca oob_tcp_if_include " + cidr() + " " + args;
  }

 private:
  std::string tag_, subnet_;
  bool up_ = false;
};

}  // namespace tt::test
