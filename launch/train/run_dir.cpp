// Locking and claiming a run directory (see run_dir.h).
#include "launch/train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <vector>

#include "core/checkpoint_io.h"
#include "core/error.h"
#include "core/fs.h"

namespace tt {

namespace {
// The files a run writes into its run_dir (TensorBoard events in tb/, traces in trace/, the
// planner's prediction.json; `plot` adds loss.png and `report` report.html). Everything else there —
// a data folder the quick start keeps beside its run, say — belongs to the user and is never moved.
const char* const kRunFiles[] = {"metrics.jsonl", "config.pbtxt",    "checkpoints", "tb",
                                 "trace",         "prediction.json", "loss.png",    "report.html"};

std::string lock_path(const std::string& run_dir) { return run_dir + "/.lock"; }

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "an unknown host";
  return host;
}

int64_t count_lines(const std::string& path) {
  std::ifstream in(path);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.empty() ? 0 : 1;
  return n;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }
}  // namespace

RunDirLock::RunDirLock(const std::string& run_dir) {
  ensure_dir(run_dir);
  const std::string path = lock_path(run_dir);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error(ErrorKind::kRuntime, str("cannot create the run directory's lock file: ", std::strerror(errno)), path,
                "check that logging.run_dir is writable");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_file_to_string(path);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK)
      throw Error(ErrorKind::kRuntime, str("cannot lock the run directory: ", std::strerror(err)), path,
                  "logging.run_dir must be on a file system with flock(2) locks");
    throw Error(ErrorKind::kConfig,
                str("logging.run_dir ", run_dir, " is in use by another training (",
                    holder.empty() ? std::string("its process is starting") : holder.substr(0, holder.find('\n')), ")"),
                path, "wait for that run to end or stop it, or point logging.run_dir at another directory");
  }
  const std::string me = str("PID ", ::getpid(), " on host ", host_name(), " since ", now_utc(), "\n");
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != ssize_t(me.size()))
    throw Error(ErrorKind::kRuntime, str("cannot write the run directory's lock file: ", std::strerror(errno)), path,
                "check that logging.run_dir is writable and the disk is not full");
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock; the file stays for the next holder to reuse
}

std::string describe_existing_run(const std::string& run_dir) {
  std::vector<std::string> parts;
  const auto checkpoints = list_checkpoints(run_dir + "/checkpoints");
  if (!checkpoints.empty()) parts.push_back(str("checkpoints up to step ", checkpoints.back().first));
  const std::string metrics = run_dir + "/metrics.jsonl";
  if (exists(metrics)) {
    const int64_t lines = count_lines(metrics);
    if (lines > 0) parts.push_back(str("metrics.jsonl (", lines, lines == 1 ? " step)" : " steps)"));
  }
  if (exists(run_dir + "/config.pbtxt")) parts.push_back("config.pbtxt");
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string prepare_run_dir(const std::string& run_dir, RunStart start) {
  if (start == RunStart::kResume) return "";
  const std::string existing = describe_existing_run(run_dir);
  if (existing.empty()) return "";
  if (start == RunStart::kFresh)
    throw Error(ErrorKind::kConfig, str("logging.run_dir ", run_dir, " already holds a run (", existing, ")"), run_dir,
                "continue it with --resume, point logging.run_dir at a new directory, or pass --overwrite to move "
                "the old run aside (into " +
                    run_dir + ".previous-N) and start fresh");
  std::string aside;
  for (int k = 1; aside.empty() || exists(aside); ++k) aside = str(run_dir, ".previous-", k);
  ensure_dir(aside);
  for (const char* name : kRunFiles) {
    const std::string from = run_dir + "/" + name, to = aside + "/" + name;
    if (exists(from) && std::rename(from.c_str(), to.c_str()) != 0)
      throw Error(ErrorKind::kRuntime, str("cannot move ", from, " to ", to, ": ", std::strerror(errno)), from,
                  "move the old run's files away by hand, or point logging.run_dir at a new directory");
  }
  return aside;
}

}  // namespace tt
