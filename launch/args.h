// A small declarative command-line parser for the git-style subcommands: options with values
// (`--config F`, `--config=F`), repeatable options (`--set k=v`), flags, and generated `--help`.
// Unknown options and missing values are ErrorKind::kUsage errors that point at `--help`.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace tt {

class ArgParser {
 public:
  ArgParser(std::string command, std::string summary);

  ArgParser& option(const std::string& name, const std::string& metavar, const std::string& help,
                    const std::string& default_value = "", bool required = false);
  ArgParser& repeated(const std::string& name, const std::string& metavar, const std::string& help);
  ArgParser& flag(const std::string& name, const std::string& help);
  ArgParser& positional(const std::string& metavar, const std::string& help, bool required = true);

  // Returns false when --help was asked for (help already printed to stdout).
  bool parse(const std::vector<std::string>& args);

  std::string get(const std::string& name) const;
  bool has(const std::string& name) const;  // given on the command line (or has a default)
  int get_int(const std::string& name) const;
  long long get_int64(const std::string& name) const;
  double get_double(const std::string& name) const;
  // get_double, and a kUsage error unless the value is a number with lo <= v <= hi (NaN never is).
  double get_double_in(const std::string& name, double lo, double hi) const;
  // get_int64, and a kUsage error "<name> <v> is outside lo..hi" unless lo <= v <= hi.
  long long get_int64_in(const std::string& name, long long lo, long long hi) const;
  bool get_flag(const std::string& name) const;
  const std::vector<std::string>& get_all(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  std::string help() const;

 private:
  struct Spec {
    std::string name, metavar, help, default_value;
    bool required = false, is_flag = false, is_repeated = false;
  };
  const Spec* find(const std::string& name) const;

  std::string command_, summary_;
  std::vector<Spec> specs_;
  std::vector<std::pair<std::string, std::string>> positional_specs_;
  bool positional_required_ = false;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

// "64K" -> 65536: a positive count with an optional binary suffix K, M or G and an optional trailing
// B. A kUsage error "bad size '<item>'" from `where` (with `hint`) unless it is one and lo <= bytes <= hi.
int64_t parse_byte_size(const std::string& item, const std::string& where, const std::string& hint, int64_t lo = 1,
                        int64_t hi = std::numeric_limits<int64_t>::max());

}  // namespace tt
