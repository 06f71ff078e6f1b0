// Implementation of the process-control helpers (POSIX: fork/exec, waitpid, /proc).
#include "tests/process_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "tests/test_util.h"

namespace tt::test {

namespace fs = std::filesystem;

namespace {

// pid -> parent pid for every process in /proc.
std::map<pid_t, pid_t> parent_map() {
  std::map<pid_t, pid_t> parents;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(e.path() / "stat");
    std::string stat;
    if (!std::getline(st, stat)) continue;
    const size_t close = stat.rfind(')');  // comm may contain spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid;
    if (rest >> state >> ppid) parents[pid_t(std::stol(name))] = ppid;
  }
  return parents;
}

int shell_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

size_t count_lines(const std::string& path) {
  std::ifstream f(path);
  size_t n = 0;
  std::string line;
  while (std::getline(f, line)) ++n;
  return n;
}

std::vector<pid_t> descendants(pid_t root) {
  const auto parents = parent_map();
  std::vector<pid_t> out;
  for (const auto& [pid, ppid] : parents) {
    for (pid_t p = ppid; p > 1;) {
      if (p == root) {
        out.push_back(pid);
        break;
      }
      const auto it = parents.find(p);
      if (it == parents.end()) break;
      p = it->second;
    }
  }
  return out;
}

pid_t find_rank_pid(pid_t root, int rank) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (pid_t pid : descendants(root)) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string var;
    while (std::getline(f, var, '\0'))
      if (var == want) return pid;
  }
  return -1;
}

std::vector<pid_t> processes_with_arg(const std::string& arg) {
  const std::string needle = '\0' + arg + '\0';
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || pid_t(std::stol(name)) == ::getpid()) continue;
    std::ifstream f(e.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (('\0' + cmdline).find(needle) != std::string::npos) out.push_back(pid_t(std::stol(name)));
  }
  return out;
}

BackgroundJob::BackgroundJob(const std::string& command, const std::string& log_path) : log_path_(log_path) {
  std::fflush(nullptr);  // else the child inherits, and writes again, what this process has buffered
  pid_ = fork();
  if (pid_ == 0) {
    FILE* out = std::freopen(log_path.c_str(), "w", stdout);
    if (!out || dup2(fileno(stdout), STDERR_FILENO) < 0) _exit(127);
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

BackgroundJob::~BackgroundJob() {
  if (pid_ <= 0 || done_) return;
  kill_all();
  int status;
  waitpid(pid_, &status, 0);
}

std::string BackgroundJob::output() const {
  std::error_code ec;
  return fs::exists(log_path_, ec) ? read_file(log_path_) : "";
}

void BackgroundJob::kill_all() {
  if (pid_ <= 0 || done_) return;
  // The tree is read before anything dies: a killed mpirun's ranks are reparented out of it.
  const std::vector<pid_t> below = descendants(pid_);
  kill(pid_, SIGKILL);
  for (pid_t p : below) kill(p, SIGKILL);
}

bool BackgroundJob::reap() {
  if (done_) return true;
  int status;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  done_ = true;
  exit_code_ = shell_status(status);
  return true;
}

void BackgroundJob::sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

int BackgroundJob::wait(double timeout_s) {
  const auto t0 = Clock::now();
  while (seconds_since(t0) < timeout_s) {
    if (reap()) return exit_code_;
    sleep_s(0.02);
  }
  return -1;
}

}  // namespace tt::test
