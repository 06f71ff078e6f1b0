// Errors for topotrain. A user mistake (bad config, corrupt file, impossible plan) is a tt::Error
// carrying what went wrong, where (file, field, rank) and a hint for the fix; library calls are
// wrapped by TT_*_CHECK macros; internal invariants use TT_ASSERT. Only launch/ turns an Error into
// an exit code, through ErrorKind.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tt {

enum class ErrorKind {
  kUsage,       // bad command line                       -> exit 2
  kConfig,      // invalid configuration                  -> exit 2
  kData,        // missing/corrupt data or tokenizer file -> exit 3
  kCheckpoint,  // missing/corrupt/mismatched checkpoint  -> exit 4
  kMemory,      // allocation over budget / out of memory -> exit 5
  kRuntime,     // anything else (library failure, I/O)   -> exit 1
  kInternal,    // broken invariant: a bug in topotrain   -> exit 70
};

const char* error_kind_name(ErrorKind kind);
int exit_code_for(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  // what: the problem; where: file/field/rank it concerns (may be empty); hint: how to fix it.
  Error(ErrorKind kind, std::string what, std::string where = "", std::string hint = "");

  ErrorKind kind() const { return kind_; }
  const std::string& problem() const { return what_; }
  const std::string& where() const { return where_; }
  const std::string& hint() const { return hint_; }

 private:
  ErrorKind kind_;
  std::string what_, where_, hint_;
};

// Builds a string from stream-able pieces: tt::str("step ", 3, " of ", 10).
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const std::string& msg);

}  // namespace tt

// Internal invariant: a failure is a bug in topotrain, not a user error.
#define TT_ASSERT(cond, ...)                                                              \
  do {                                                                                    \
    if (!(cond)) ::tt::assert_fail(#cond, __FILE__, __LINE__, ::tt::str("" __VA_ARGS__)); \
  } while (0)
