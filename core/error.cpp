// Error formatting and the ErrorKind -> exit code table (used only by launch/).
#include "core/error.h"

namespace tt {

namespace {
std::string compose(const std::string& what, const std::string& where, const std::string& hint) {
  std::string s = where.empty() ? what : where + ": " + what;
  if (!hint.empty()) s += " (hint: " + hint + ")";
  return s;
}
}  // namespace

Error::Error(ErrorKind kind, std::string what, std::string where, std::string hint)
    : std::runtime_error(compose(what, where, hint)),
      kind_(kind),
      what_(std::move(what)),
      where_(std::move(where)),
      hint_(std::move(hint)) {}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
      return "usage error";
    case ErrorKind::kConfig:
      return "config error";
    case ErrorKind::kData:
      return "data error";
    case ErrorKind::kCheckpoint:
      return "checkpoint error";
    case ErrorKind::kMemory:
      return "memory error";
    case ErrorKind::kRuntime:
      return "error";
    case ErrorKind::kInternal:
      return "internal error";
  }
  return "error";
}

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
    case ErrorKind::kConfig:
      return 2;
    case ErrorKind::kData:
      return 3;
    case ErrorKind::kCheckpoint:
      return 4;
    case ErrorKind::kMemory:
      return 5;
    case ErrorKind::kRuntime:
      return 1;
    case ErrorKind::kInternal:
      return 70;
  }
  return 1;
}

void assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  throw Error(ErrorKind::kInternal, str("assertion failed: ", cond, msg.empty() ? "" : " — ", msg),
              str(file, ":", line), "this is a bug in topotrain; please report it with `topotrain --version`");
}

}  // namespace tt
