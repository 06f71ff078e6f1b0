// delay_line: a userspace one-way delay for the packets routed through a TUN device — latency
// emulation for the two-"host" rehearsal network (netns_setup.sh --delay-ms) on kernels without
// sch_netem.
//
//   delay_line --tun NAME --delay-ms MS [--owner-pid PID] [--ring-mb 64] [--fifo] [--max-spin-us 100]
//
// Reads every packet the kernel routes into the (existing, persistent) TUN device NAME, holds it
// for MS milliseconds after it was read (CLOCK_MONOTONIC, one FIFO, so packets are never
// reordered), and writes it back into the device, from where the kernel routes it on. The device is
// opened with IFF_VNET_HDR and TSO/checksum offloads, so a TCP GSO super-packet (up to 64 KiB) is
// one read and one write, not 45 MTU-sized ones: the packet rate userspace sees at 10 Gbit/s stays
// around 20k/s, whatever the link MTU. Packets are held in one byte ring (--ring-mb); while it is
// full nothing is read and the kernel's TUN queue drops, as a full router queue would.
//
// Exits on SIGTERM, SIGINT (unless started with it ignored), or when the process --owner-pid exits
// (so a test killed by a timeout does not leave it behind), printing its counters to stderr:
// packets, bytes, the most bytes held, and how late packets were released against their due time.
//
// Timing: the release timer is a ppoll timeout with 1 ns timer slack; as it fires late by the
// wake-up latency (tens of us on a VM), it is set that much early (a running estimate, capped at
// --max-spin-us; 0 = never early) and the rest is spun, still reading. Wake-up on arrival is not
// compensated: a packet's delay starts when it is read (~20-40 us after it entered the TUN here).
// Needs CAP_NET_ADMIN (TUNSETIFF). --fifo asks for SCHED_FIFO priority 10 (fewer late wake-ups on a
// busy machine; ignored where not permitted).
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

constexpr size_t kVnetHdr = 10;                // struct virtio_net_hdr (TUNSETVNETHDRSZ default)
constexpr size_t kMaxRead = 65536 + 2 * 1024;  // vnet header + the largest GSO packet (64 KiB)
constexpr size_t kAlign = 64;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "delay_line: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "delay_line: %s\nusage: delay_line --tun NAME --delay-ms MS [--owner-pid PID] [--ring-mb N] [--fifo] "
               "[--max-spin-us N]\n",
               msg);
  std::exit(2);
}

struct Held {
  size_t off;
  uint32_t len;
  int64_t due_ns;
};

// Packet bytes live in one ring; `held` is the FIFO of what is in it, oldest first.
class Ring {
 public:
  explicit Ring(size_t bytes) : buf_(bytes) {}
  // Where the next read may write kMaxRead bytes, or nullptr when the ring is full.
  char* reserve() {
    if (held.empty()) tail_ = 0;
    const size_t head = held.empty() ? 0 : held.front().off;
    if (held.empty() || tail_ > head) {  // free: [tail, end) and [0, head)
      if (buf_.size() - tail_ >= kMaxRead) return &buf_[tail_];
      if (held.empty() || head > kMaxRead) {
        tail_ = 0;
        return &buf_[0];
      }
      return nullptr;
    }
    // tail < head: free is [tail, head); keep tail strictly below head so "tail > head" stays unambiguous
    return head - tail_ > kMaxRead ? &buf_[tail_] : nullptr;
  }
  void commit(uint32_t len, int64_t due_ns) {
    held.push_back({tail_, len, due_ns});
    bytes_held += len;
    tail_ += (len + kAlign - 1) / kAlign * kAlign;
  }
  const char* data(const Held& h) const { return &buf_[h.off]; }
  void pop() {
    bytes_held -= held.front().len;
    held.pop_front();
  }
  std::deque<Held> held;
  size_t bytes_held = 0;

 private:
  std::vector<char> buf_;
  size_t tail_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string tun_name;
  double delay_ms = -1;
  long owner_pid = 0;
  double ring_mb = 64;
  bool fifo = false;
  double max_spin_us = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--tun")
      tun_name = value();
    else if (a == "--delay-ms")
      delay_ms = std::atof(value());
    else if (a == "--owner-pid")
      owner_pid = std::atol(value());
    else if (a == "--ring-mb")
      ring_mb = std::atof(value());
    else if (a == "--fifo")
      fifo = true;
    else if (a == "--max-spin-us")
      max_spin_us = std::atof(value());
    else
      usage(("unknown argument " + a).c_str());
  }
  if (tun_name.empty() || tun_name.size() >= IFNAMSIZ) usage("--tun NAME is required (at most 15 characters)");
  if (!(delay_ms >= 0) || delay_ms > 10000) usage("--delay-ms must be in [0, 10000]");
  if (!(ring_mb >= 1)) usage("--ring-mb must be >= 1");
  if (!(max_spin_us >= 0)) usage("--max-spin-us must be >= 0");
  const int64_t delay_ns = int64_t(std::llround(delay_ms * 1e6));

  // Wake-ups exactly when due: the default 50 us timer slack would be half of a 0.1 ms delay.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (fifo) {
    sched_param p{};
    p.sched_priority = 10;
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0)
      std::fprintf(stderr, "delay_line: SCHED_FIFO not permitted; running normally\n");
  }

  const int tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (tun < 0) die("open /dev/net/tun");
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
  std::strncpy(ifr.ifr_name, tun_name.c_str(), IFNAMSIZ - 1);
  if (ioctl(tun, TUNSETIFF, &ifr) != 0) die("TUNSETIFF " + tun_name);
  // Accept GSO/partial-checksum packets as they are (one read per TCP super-packet).
  if (ioctl(tun, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN) != 0) die("TUNSETOFFLOAD");
  if (fcntl(tun, F_SETFL, O_NONBLOCK) != 0) die("O_NONBLOCK");

  int owner = -1;
  if (owner_pid > 0) {
    owner = int(syscall(SYS_pidfd_open, pid_t(owner_pid), 0));
    if (owner < 0) die("pidfd_open of --owner-pid " + std::to_string(owner_pid));
  }

  // SIGTERM/SIGINT are blocked except inside ppoll, so a signal cannot slip between check and wait.
  sigset_t block, wait_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, &wait_mask);
  sigdelset(&wait_mask, SIGTERM);
  sigdelset(&wait_mask, SIGINT);
  // A SIGINT ignored by whoever started us (a background job of a script) stays ignored: a Ctrl-C of
  // the run this delay line serves must not cut the link under its last collective.
  struct sigaction sa {
  }, old_int{};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, nullptr, &old_int);
  if (old_int.sa_handler != SIG_IGN) sigaction(SIGINT, &sa, nullptr);

  Ring ring(size_t(ring_mb * 1024 * 1024));
  uint64_t packets = 0, bytes = 0, write_errors = 0, truncated = 0, ring_full = 0;
  size_t max_held_bytes = 0, max_held_packets = 0;
  int64_t late_max = 0, wake_late_ns = 0;
  uint64_t spins = 0;
  const int64_t max_spin_ns = int64_t(max_spin_us * 1000);
  double late_sum = 0;
  std::fprintf(stderr, "delay_line: %s, one-way delay %.3f ms\n", tun_name.c_str(), delay_ms);

  while (!g_stop) {
    // 1. Release everything that is due, oldest first.
    int64_t now = now_ns();
    while (!ring.held.empty() && ring.held.front().due_ns <= now) {
      const Held& h = ring.held.front();
      if (write(tun, ring.data(h), h.len) != ssize_t(h.len)) ++write_errors;
      const int64_t late = now - h.due_ns;
      late_sum += double(late);
      late_max = std::max(late_max, late);
      ring.pop();
      now = now_ns();
    }
    // 2. Take in what has arrived (bounded, so releases are not starved by a flood).
    int got = 0;
    bool full = false;
    while (got < 64) {
      char* dst = ring.reserve();
      if (!dst) {
        full = true;
        ++ring_full;
        break;
      }
      const ssize_t n = read(tun, dst, kMaxRead);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        die("read " + tun_name);
      }
      if (size_t(n) >= kMaxRead) ++truncated;
      if (size_t(n) <= kVnetHdr) continue;
      ring.commit(uint32_t(n), now_ns() + delay_ns);
      ++packets;
      bytes += uint64_t(n) - kVnetHdr;
      ++got;
    }
    max_held_bytes = std::max(max_held_bytes, ring.bytes_held);
    max_held_packets = std::max(max_held_packets, ring.held.size());
    if (got > 0 && !ring.held.empty() && ring.held.front().due_ns <= now_ns()) continue;
    if (got == 64) continue;
    // 3. Sleep until the oldest packet is due or something arrives (not reading while full). The
    //    timer fires late by the wake-up latency (tens of us on a VM), so it is set that much early
    //    (a running estimate, at most --max-spin-us) and the rest is spun in this loop, which keeps
    //    reading meanwhile.
    pollfd fds[2] = {{tun, short(full ? 0 : POLLIN), 0}, {owner, POLLIN, 0}};
    timespec ts{}, *timeout = nullptr;
    int64_t target = 0;
    if (!ring.held.empty()) {
      const int64_t t = now_ns(), wait = ring.held.front().due_ns - t - wake_late_ns;
      if (wait <= 0) {
        ++spins;
        continue;
      }
      target = t + wait;
      ts.tv_sec = wait / 1000000000;
      ts.tv_nsec = wait % 1000000000;
      timeout = &ts;
    }
    const int r = ppoll(fds, owner >= 0 ? 2 : 1, timeout, &wait_mask);
    if (r < 0 && errno != EINTR) die("ppoll");
    if (r == 0 && timeout) {
      const int64_t late = std::clamp<int64_t>(now_ns() - target, 0, max_spin_ns);
      wake_late_ns += (late - wake_late_ns) / 8;
    }
    if (r > 0 && owner >= 0 && (fds[1].revents & POLLIN)) {
      std::fprintf(stderr, "delay_line: owner process %ld exited\n", owner_pid);
      break;
    }
  }
  const uint64_t released = packets - ring.held.size();
  std::fprintf(
      stderr,
      "delay_line: %llu packets (%llu bytes, %.0f B/packet), most held %zu packets / %zu bytes, "
      "released late by %.1f us on average (max %.1f us), %llu write errors, %llu truncated, ring full in %llu "
      "rounds, timer wake-up latency estimate %.1f us, %llu spin rounds\n",
      (unsigned long long)packets, (unsigned long long)bytes, packets ? double(bytes) / double(packets) : 0.0,
      max_held_packets, max_held_bytes, released ? late_sum / double(released) / 1e3 : 0.0, double(late_max) / 1e3,
      (unsigned long long)write_errors, (unsigned long long)truncated, (unsigned long long)ring_full,
      double(wake_late_ns) / 1e3, (unsigned long long)spins);
  return 0;
}
