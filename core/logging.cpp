// stderr logger: "[tt rank R] message" in multi-rank runs, "[tt] message" otherwise.
#include "core/logging.h"

#include <cstdio>
#include <mutex>

namespace tt {

namespace {
LogLevel g_level = LogLevel::kInfo;
int g_rank = 0, g_world = 1;
std::mutex g_mutex;
}  // namespace

void set_log_level(LogLevel level) { g_level = level; }
void set_log_rank(int rank, int world_size) {
  g_rank = rank;
  g_world = world_size;
}
bool log_is_rank0() { return g_rank == 0; }

void log_line(LogLevel level, const std::string& msg) {
  if (level < g_level) return;
  static const char* kTags[] = {"debug: ", "", "warning: ", "error: "};
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_world > 1)
    std::fprintf(stderr, "[tt rank %d] %s%s\n", g_rank, kTags[int(level)], msg.c_str());
  else
    std::fprintf(stderr, "[tt] %s%s\n", kTags[int(level)], msg.c_str());
  std::fflush(stderr);
}

}  // namespace tt
