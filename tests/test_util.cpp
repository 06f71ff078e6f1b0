// Implementation of the test helpers (POSIX: mkdtemp, popen).
#include "tests/test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace tt::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/topotrain_test_XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed for: " + command);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CommandResult run_topotrain(const std::string& args) { return run_command(std::string(TT_BINARY) + " " + args); }

std::string source_dir() { return TT_SOURCE_DIR; }

std::string shared_dir() {
  std::filesystem::path p = std::filesystem::path(TT_SOURCE_DIR).parent_path() / "shared";
  return std::filesystem::exists(p) ? p.string() : "";
}

std::map<int, std::string> metric_by_step(const std::string& metrics_path, const std::string& field) {
  std::map<int, std::string> out;
  std::ifstream f(metrics_path);
  std::string line;
  const std::regex step_re("\"step\":(\\d+)"), value_re("\"" + field + "\":([^,}]+)");
  while (std::getline(f, line)) {
    std::smatch s, v;
    if (std::regex_search(line, s, step_re) && std::regex_search(line, v, value_re)) out[std::stoi(s[1])] = v[1];
  }
  return out;
}

double StepMetrics::loss_value() const { return std::stod(loss); }

std::map<int, StepMetrics> read_step_metrics(const std::string& metrics_path) {
  std::map<int, StepMetrics> out;
  std::ifstream f(metrics_path);
  std::string line;
  const std::regex step_re("\"step\":(\\d+)"), loss_re("\"loss\":([^,}]+)"), comm_re("\"comm_s\":([^,}]+)"),
      exposed_re("\"exposed_comm_s\":([^,}]+)"), peak_re("\"peak_memory_bytes\":([^,}]+)"),
      gather_re("\"param_gather_s\":([^,}]+)");
  while (std::getline(f, line)) {
    std::smatch s, l, c, e, p, g;
    if (!std::regex_search(line, s, step_re) || !std::regex_search(line, l, loss_re)) continue;
    StepMetrics r;
    r.loss = l[1];
    if (std::regex_search(line, c, comm_re)) r.comm_s = std::stod(c[1]);
    if (std::regex_search(line, e, exposed_re)) r.exposed_comm_s = std::stod(e[1]);
    if (std::regex_search(line, p, peak_re)) r.peak_memory_bytes = std::stod(p[1]);
    if (std::regex_search(line, g, gather_re)) r.param_gather_s = std::stod(g[1]);
    out[std::stoi(s[1])] = r;
  }
  return out;
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  f << content;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace tt::test
