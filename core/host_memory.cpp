// Host memory available to this process (see host_memory.h).
#include "core/host_memory.h"

#include <fstream>
#include <sstream>

namespace tt {

namespace {
// The first number in a file ("max" and unreadable files give -1).
int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  try {
    return std::stoll(word);
  } catch (...) {
    return -1;
  }
}

// The value of `key` (e.g. "MemAvailable:" in /proc/meminfo, "inactive_file" in memory.stat).
int64_t read_keyed(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  int64_t v = 0;
  std::string rest;
  while (in >> k >> v) {
    if (k == key) return v;
    std::getline(in, rest);
  }
  return -1;
}

// The memory cgroup directory of this process: v2 ("0::/path") or v1 ("N:memory:/path").
std::string cgroup_dir(bool* v2) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v2_path, v1_path;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
    const size_t at = line.find(":memory:");
    if (at != std::string::npos) v1_path = line.substr(at + 8);
  }
  if (!v1_path.empty()) {
    *v2 = false;
    const std::string nested = "/sys/fs/cgroup/memory" + v1_path;
    return std::ifstream(nested + "/memory.limit_in_bytes") ? nested : "/sys/fs/cgroup/memory";
  }
  *v2 = true;
  return "/sys/fs/cgroup" + v2_path;
}
}  // namespace

HostMemory host_memory_available() {
  HostMemory m;
  const int64_t avail_kb = read_keyed("/proc/meminfo", "MemAvailable:");
  m.available_bytes = avail_kb > 0 ? uint64_t(avail_kb) * 1024 : UINT64_MAX;
  m.limited_by = "MemAvailable in /proc/meminfo";
  bool v2 = false;
  const std::string dir = cgroup_dir(&v2);
  const std::string limit_file = dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
  const int64_t limit = read_number(limit_file);
  const int64_t usage = read_number(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
  if (limit <= 0 || usage < 0 || limit >= (int64_t(1) << 60)) return m;  // no limit
  const int64_t cache = read_keyed(dir + "/memory.stat", v2 ? "inactive_file" : "total_inactive_file");
  const int64_t used = usage - (cache > 0 ? cache : 0);
  const uint64_t left = limit > used ? uint64_t(limit - used) : 0;
  if (left < m.available_bytes) {
    m.available_bytes = left;
    m.limited_by = "the memory cgroup's limit in " + limit_file;
  }
  return m;
}

}  // namespace tt
