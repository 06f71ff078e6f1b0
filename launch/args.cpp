// ArgParser implementation (see args.h).
#include "launch/args.h"

#include <cctype>
#include <cstdio>

#include "core/error.h"

namespace tt {

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

ArgParser& ArgParser::option(const std::string& name, const std::string& metavar, const std::string& help,
                             const std::string& default_value, bool required) {
  specs_.push_back({name, metavar, help, default_value, required, false, false});
  return *this;
}

ArgParser& ArgParser::repeated(const std::string& name, const std::string& metavar, const std::string& help) {
  specs_.push_back({name, metavar, help, "", false, false, true});
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", help, "", false, true, false});
  return *this;
}

ArgParser& ArgParser::positional(const std::string& metavar, const std::string& help, bool required) {
  positional_specs_.push_back({metavar, help});
  positional_required_ = positional_required_ || required;
  return *this;
}

const ArgParser::Spec* ArgParser::find(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

std::string ArgParser::help() const {
  std::string h = "usage: " + command_;
  for (const auto& s : specs_)
    if (s.required) h += " " + s.name + " " + s.metavar;
  h += " [options]";
  for (const auto& p : positional_specs_) h += " " + p.first;
  h += "\n\n" + summary_ + "\n\noptions:\n";
  for (const auto& s : specs_) {
    std::string left = "  " + s.name + (s.metavar.empty() ? "" : " " + s.metavar);
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    h += left + s.help;
    if (!s.default_value.empty()) h += " (default: " + s.default_value + ")";
    if (s.is_repeated) h += " (repeatable)";
    h += "\n";
  }
  for (const auto& p : positional_specs_) {
    std::string left = "  " + p.first;
    if (left.size() < 28) left.resize(28, ' ');
    h += left + p.second + "\n";
  }
  h += "  --help                    show this help\n";
  return h;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  const std::string hint = "see `" + command_ + " --help`";
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (a.rfind("--", 0) != 0 || a == "--") {
      positionals_.push_back(a);
      continue;
    }
    std::string value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    const Spec* s = find(a);
    if (!s) throw Error(ErrorKind::kUsage, "unknown option '" + a + "'", command_, hint);
    if (s->is_flag) {
      if (inline_value) throw Error(ErrorKind::kUsage, "option '" + a + "' takes no value", command_, hint);
      values_[a] = {"1"};
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size())
        throw Error(ErrorKind::kUsage, "option '" + a + "' needs a value " + s->metavar, command_, hint);
      value = args[++i];
    }
    if (s->is_repeated)
      values_[a].push_back(value);
    else
      values_[a] = {value};
  }
  for (const auto& s : specs_)
    if (s.required && !values_.count(s.name))
      throw Error(ErrorKind::kUsage, "missing required option " + s.name + " " + s.metavar, command_, hint);
  if (positional_required_ && positionals_.empty())
    throw Error(ErrorKind::kUsage, "missing " + positional_specs_.front().first, command_, hint);
  if (positional_specs_.empty() && !positionals_.empty())
    throw Error(ErrorKind::kUsage, "unexpected argument '" + positionals_.front() + "'", command_, hint);
  return true;
}

bool ArgParser::has(const std::string& name) const {
  if (values_.count(name)) return true;
  const Spec* s = find(name);
  return s && !s->default_value.empty();
}

std::string ArgParser::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  const Spec* s = find(name);
  TT_ASSERT(s, "option ", name, " was not declared");
  return s->default_value;
}

bool ArgParser::get_flag(const std::string& name) const { return values_.count(name) > 0; }

const std::vector<std::string>& ArgParser::get_all(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = values_.find(name);
  return it == values_.end() ? kEmpty : it->second;
}

namespace {
template <typename T, typename F>
T parse_number(const std::string& command, const std::string& name, const std::string& v, F f) {
  try {
    size_t used = 0;
    T x = f(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::kUsage, "option " + name + " expects a number, got '" + v + "'", command,
              "see `" + command + " --help`");
}
}  // namespace

int ArgParser::get_int(const std::string& name) const {
  return parse_number<int>(command_, name, get(name), [](const std::string& s, size_t* u) { return std::stoi(s, u); });
}
long long ArgParser::get_int64(const std::string& name) const {
  return parse_number<long long>(command_, name, get(name),
                                 [](const std::string& s, size_t* u) { return std::stoll(s, u); });
}
long long ArgParser::get_int64_in(const std::string& name, long long lo, long long hi) const {
  const long long v = get_int64(name);
  if (v < lo || v > hi)
    throw Error(ErrorKind::kUsage, str(name, " ", v, " is outside ", lo, "..", hi), command_,
                "see `" + command_ + " --help`");
  return v;
}
double ArgParser::get_double(const std::string& name) const {
  return parse_number<double>(command_, name, get(name),
                              [](const std::string& s, size_t* u) { return std::stod(s, u); });
}

double ArgParser::get_double_in(const std::string& name, double lo, double hi) const {
  const double v = get_double(name);
  if (!(v >= lo && v <= hi))
    throw Error(ErrorKind::kUsage, str(name, " ", get(name), " is outside ", lo, "..", hi), command_,
                "see `" + command_ + " --help`");
  return v;
}

int64_t parse_byte_size(const std::string& item, const std::string& where, const std::string& hint, int64_t lo,
                        int64_t hi) {
  std::string s = item;
  if (!s.empty() && (s.back() == 'B' || s.back() == 'b')) s.pop_back();
  int64_t mult = 1;
  if (!s.empty()) {
    const char c = char(std::toupper((unsigned char)s.back()));
    mult = c == 'K' ? int64_t(1) << 10 : c == 'M' ? int64_t(1) << 20 : c == 'G' ? int64_t(1) << 30 : 1;
    if (mult != 1) s.pop_back();
  }
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || v < 1 || v > hi / mult || v * mult < lo)
    throw Error(ErrorKind::kUsage, "bad size '" + item + "'", where, hint);
  return v * mult;
}

}  // namespace tt
