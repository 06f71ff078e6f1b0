// Two "hosts" on one machine for the mpi-labelled DDP tests: two network namespaces <tag>a/<tag>b
// joined by a veth pair on a private /24 (netns_setup.sh), mpirun started in host a with an rsh
// agent (netns_rsh.sh) that starts rank 1's daemon in host b. Nothing is added to the root
// namespace; the namespaces are named <prefix><pid>a/b, removed by an RAII guard, and those left by
// test processes that no longer exist are swept by sweep_stale_namespaces.
// With a one-way delay (up("1")), a router namespace <prefix><pid>r between the hosts runs
// delay_line.cpp behind a TUN device (netns_setup.sh --delay-ms): latency without sch_netem.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace tt::test {

inline std::string netns_scripts_dir() { return source_dir() + "/tests/parallel/ddp"; }

// The delay_line executable (tests/CMakeLists.txt), or "" where this test binary was built without it.
inline std::string delay_line_path() {
#ifdef TT_DELAY_LINE
  return TT_DELAY_LINE;
#else
  return "";
#endif
}

// Why a delayed network (TwoHostNetwork::up with a delay) cannot be built here, or "" when it can
// (root and network namespaces are checked by the callers).
inline std::string delay_line_unavailable_reason() {
  const std::string path = delay_line_path();
  if (path.empty()) return "this test binary was built without the delay_line helper";
  if (access(path.c_str(), X_OK) != 0) return "delay_line helper not built: " + path;
  const int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) return "cannot open /dev/net/tun (no TUN support or no permission)";
  close(fd);
  return "";
}

// Removes the networks (<prefix><pid>a/b/r namespaces and a router's delay line) whose creating
// test process is gone.
inline void sweep_stale_namespaces(const std::string& prefix) {
  const auto r = run_command("ip netns list");
  std::istringstream lines(r.output);
  std::string line;
  const std::regex name_re("^(" + prefix + "(\\d+))[abr]\\b.*");
  std::set<std::string> stale;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, name_re)) continue;
    const pid_t pid = pid_t(std::stol(m[2]));
    if (pid == getpid() || kill(pid, 0) == 0) continue;
    stale.insert(m[1]);
  }
  for (const auto& tag : stale) run_command("sh " + netns_scripts_dir() + "/netns_setup.sh down " + tag);
}

// A socket of `type` created in network namespace `ns`: the calling thread enters it for the
// socket() call only (a socket stays in the namespace it was created in). -1 on failure.
inline int socket_in_netns(const std::string& ns, int type) {
  const int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  const int target = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  int s = -1;
  if (self >= 0 && target >= 0 && setns(target, CLONE_NEWNET) == 0) {
    s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    if (setns(self, CLONE_NEWNET) != 0) std::abort();  // never leave the test thread in a test namespace
  }
  if (self >= 0) close(self);
  if (target >= 0) close(target);
  return s;
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

  // `delay_ms` (e.g. "0.1"): one-way delay each way through the router's delay line; "" for the
  // plain veth pair. The delay line ends with this process at the latest (--owner-pid).
  CommandResult up(const std::string& delay_ms = "") {
    up_ = true;  // the script cleans up after itself on failure; down is idempotent anyway
    std::string cmd = "sh " + netns_scripts_dir() + "/netns_setup.sh up " + tag_ + " " + subnet_;
    if (!delay_ms.empty())
      cmd +=
          " --delay-ms " + delay_ms + " --delay-line " + delay_line_path() + " --owner-pid " + std::to_string(getpid());
    return run_command(cmd);
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
  // Median round trip of a 1-byte TCP ping-pong from host a to host b (TCP_NODELAY, `rounds` after
  // 5 warm-up rounds), in ms; -1 on any socket error. Runs in this process (sockets made in the
  // hosts' namespaces), so it needs no tools and no mpirun.
  double tcp_rtt_ms(int rounds) const {
    const int srv = socket_in_netns(ns('b'), SOCK_STREAM), cli = socket_in_netns(ns('a'), SOCK_STREAM);
    int conn = -1;
    double result = -1;
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    addr.sin_family = AF_INET;
    const int one = 1;
    const timeval timeout{5, 0};
    if (srv >= 0 && cli >= 0 && inet_pton(AF_INET, ip('b').c_str(), &addr.sin_addr) == 1 &&
        bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(srv, 1) == 0 &&
        getsockname(srv, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        setsockopt(cli, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) == 0 &&
        setsockopt(cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0 &&
        connect(cli, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        (conn = accept(srv, nullptr, nullptr)) >= 0 &&
        setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0) {
      std::thread echo([conn] {
        char c;
        while (recv(conn, &c, 1, 0) == 1 && send(conn, &c, 1, MSG_NOSIGNAL) == 1) {
        }
      });
      std::vector<double> rtt;
      char c = 'x';
      for (int i = 0; i < rounds + 5; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        if (send(cli, &c, 1, MSG_NOSIGNAL) != 1 || recv(cli, &c, 1, 0) != 1) break;
        if (i >= 5)
          rtt.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      shutdown(cli, SHUT_RDWR);
      shutdown(conn, SHUT_RDWR);
      echo.join();
      if (int(rtt.size()) == rounds && rounds > 0) {
        std::nth_element(rtt.begin(), rtt.begin() + rounds / 2, rtt.end());
        result = rtt[rounds / 2];
      }
    }
    for (const int fd : {srv, cli, conn})
      if (fd >= 0) close(fd);
    return result;
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
  // would bypass it, as both "hosts" share one kernel). --bind-to none: each host's orted would bind
  // its one rank to core 0, so both ranks would share one core. `env` is prepended as VAR=value words.
  std::string mpirun(const std::string& args, int timeout_s = 60, const std::string& env = "") const {
    return "TT_NETNS_HOSTS='" + ip('a') + "=" + ns('a') + " " + ip('b') + "=" + ns('b') + "'" +
           (env.empty() ? "" : " " + env) + " timeout " + std::to_string(timeout_s) + " ip netns exec " + ns('a') +
           " " + TT_MPIRUN + " --bind-to none -np 2 --host " + ip('a') + ":1," + ip('b') + ":1" +
           " --mca plm_rsh_agent " + netns_scripts_dir() + "/netns_rsh.sh" +
           " --mca btl tcp,self --mca btl_tcp_if_include " + cidr() + " --mca oob_tcp_if_include " + cidr() + " " +
           args;
  }

 private:
  std::string tag_, subnet_;
  bool up_ = false;
};

}  // namespace tt::test
