// Logging to stderr with a level and an optional rank prefix. Thread-safe (one line per call).
// Rank-0-only output is the caller's choice via log_is_rank0(); set_log_rank() is called once at
// start-up by launch/.
#pragma once

#include "core/error.h"

namespace tt {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_log_level(LogLevel level);
void set_log_rank(int rank, int world_size);
bool log_is_rank0();
void log_line(LogLevel level, const std::string& msg);

template <typename... Args>
void log_debug(const Args&... a) {
  log_line(LogLevel::kDebug, str(a...));
}
template <typename... Args>
void log_info(const Args&... a) {
  log_line(LogLevel::kInfo, str(a...));
}
template <typename... Args>
void log_warn(const Args&... a) {
  log_line(LogLevel::kWarn, str(a...));
}
template <typename... Args>
void log_error(const Args&... a) {
  log_line(LogLevel::kError, str(a...));
}

}  // namespace tt
