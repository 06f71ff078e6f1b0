// Fuzz target helpers (see fuzz_util.h).
#include "tests/fuzz/fuzz_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/fs.h"
#include "core/logging.h"
#include "core/model/hf_checkpoint.h"

namespace tt::fuzz {

namespace {

void remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    clear_dir(path);
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

}  // namespace

void clear_dir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  closedir(d);
  for (const std::string& n : names) remove_tree(dir + "/" + n);
}

const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t && *t) {
      base = t;
    } else if (access("/dev/shm", W_OK) == 0) {
      base = "/dev/shm";  // memory-backed: the targets rewrite their file on every input
    }
    std::string tmpl = base + "/tt_fuzz.XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    static std::string to_remove;
    to_remove = tmpl;
    std::atexit([] { remove_tree(to_remove); });
    return tmpl;
  }();
  return dir;
}

std::string write_scratch_file(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

std::string source_dir() { return TT_SOURCE_DIR; }

void quiet_logs() { set_log_level(LogLevel::kError); }

void fuzz_hf_model_file(const std::string& fixture, const std::vector<std::string>& kept, const std::string& input_name,
                        std::string_view input, int64_t max_values) {
  const std::string dir = scratch_dir() + "/" + fixture;
  if (!is_directory(dir)) {
    ensure_dir(dir);
    for (const std::string& name : kept)
      write_scratch_file(fixture + "/" + name,
                         read_file_to_string(source_dir() + "/tests/fixtures/models/" + fixture + "/" + name));
  }
  write_scratch_file(fixture + "/" + input_name, input);
  expect_only_tt_errors([&] {
    std::unique_ptr<WeightSource> source = open_hf_checkpoint(dir);
    (void)source->describe();
    const int64_t n = std::min<int64_t>(source->layout().numel, max_values);
    std::vector<float> out(size_t(std::max<int64_t>(n, 0)));
    if (n > 0) source->read(0, n, out.data());
  });
}

std::vector<std::string_view> split_input(const uint8_t* data, size_t size, std::string_view sep) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (size_t at; (at = all.find(sep, begin)) != std::string_view::npos; begin = at + sep.size())
    parts.push_back(all.substr(begin, at - begin));
  parts.push_back(all.substr(begin));
  return parts;
}

}  // namespace tt::fuzz
