// SIGBUS on a guarded mapping becomes an error naming the file (see mapping_guard.h).
#include "core/mapping_guard.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace tt {

namespace {
struct Slot {
  std::atomic<uintptr_t> begin{0};  // 0: free; published last, after the fields below
  size_t bytes = 0;
  int exit_code = 1;
  char message[640] = {};
};

constexpr size_t kSlots = 4096;
Slot g_slots[kSlots];
std::mutex g_mutex;  // guards and unguards (not the handler)
bool g_installed = false;

void write_all(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}

extern "C" void on_sigbus(int sig, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin != 0 && addr >= begin && addr - begin < s.bytes) {
      write_all(s.message);
      _exit(s.exit_code);
    }
  }
  ::signal(sig, SIG_DFL);  // not ours: the default action once the handler returns
}

void install_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
  g_installed = true;
}
}  // namespace

void guard_mapping(const void* begin, size_t bytes, const std::string& path, const char* what, ErrorKind kind) {
  if (!begin || bytes == 0) return;
  const std::string message =
      str("topotrain: ", error_kind_name(kind), ": ", path, ": the ", what,
          " changed on disk while it was being read (truncated, or rewritten in place) (hint: files a run reads must "
          "not change while it runs: write new files elsewhere and point the run at them; a training run continues "
          "with --resume)\n");
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_installed) install_handler();
  for (Slot& s : g_slots) {
    if (s.begin.load(std::memory_order_relaxed) != 0) continue;
    s.bytes = bytes;
    s.exit_code = exit_code_for(kind);
    std::strncpy(s.message, message.c_str(), sizeof s.message - 2);
    s.message[sizeof s.message - 2] = '\n';  // a cut message still ends its line
    s.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return;
  }
}

void unguard_mapping(const void* begin) {
  if (!begin) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots)
    if (s.begin.load(std::memory_order_relaxed) == reinterpret_cast<uintptr_t>(begin)) {
      s.begin.store(0, std::memory_order_release);
      return;
    }
}

}  // namespace tt
