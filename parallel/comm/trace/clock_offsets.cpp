// Clock-offset exchange (see clock_offsets.h).
#include "parallel/comm/trace/clock_offsets.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "core/trace_recorder.h"

namespace tt::parallel {

namespace {
// Broadcasts `count` int64 values from `root` (as int32 pairs: every backend moves those).
void broadcast_i64(Communicator& comm, int64_t* values, int count, int root) {
  comm.broadcast(values, 2 * int64_t(count), DType::kI32, root)->wait();
}
}  // namespace

int64_t clock_identity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  if (boot.empty()) return 0;
  char ns[128] = {0};  // "time:[4026531834]"; absent before Linux 5.6 (one time namespace then)
  const ssize_t n = readlink("/proc/self/ns/time", ns, sizeof ns - 1);
  const std::string id = boot + "|" + (n > 0 ? std::string(ns, size_t(n)) : std::string());
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  return int64_t(h | 1);  // never 0
}

std::vector<ClockOffset> measure_clock_offsets(Communicator& comm, int exchanges, bool measure_shared) {
  const int world = comm.size(), me = comm.rank();
  std::vector<ClockOffset> offsets(static_cast<size_t>(world));
  // Which ranks read rank 0's clock: every rank learns every rank's clock identity, so all skip the
  // same exchanges.
  std::vector<int64_t> ids(static_cast<size_t>(world), 0);
  const int64_t mine = clock_identity();
  if (world > 1) comm.all_gather(&mine, ids.data(), 2, DType::kI32)->wait();
  for (int r = 1; r < world; ++r) {
    if (!measure_shared && ids[0] != 0 && ids[size_t(r)] == ids[0]) {
      if (me == 0) offsets[size_t(r)] = ClockOffset{0, 0, true};
      continue;
    }
    int64_t best_rtt = std::numeric_limits<int64_t>::max(), best_offset = 0;
    for (int k = 0; k <= exchanges; ++k) {  // k == 0 warms the path up
      int64_t ping[1] = {trace::now_ns()};  // t1 on rank 0
      broadcast_i64(comm, ping, 1, 0);
      int64_t pong[2] = {0, 0};
      if (me == r) pong[0] = trace::now_ns();  // t2
      if (me == r) pong[1] = trace::now_ns();  // t3, just before sending
      broadcast_i64(comm, pong, 2, r);
      if (me != 0 || k == 0) continue;
      const int64_t t4 = trace::now_ns(), t1 = ping[0], t2 = pong[0], t3 = pong[1];
      const int64_t rtt = (t4 - t1) - (t3 - t2);
      if (rtt < best_rtt) {
        best_rtt = rtt;
        best_offset = ((t2 - t1) + (t3 - t4)) / 2;
      }
    }
    if (me == 0) offsets[size_t(r)] = ClockOffset{best_offset, best_rtt};
  }
  return offsets;
}

}  // namespace tt::parallel
