// Parsing of step ranges (see step_range.h).
#include "core/step_range.h"

#include <cctype>
#include <string>

namespace tt {

namespace {
// A positive decimal number of at most 9 digits filling text[begin, end); -1 otherwise.
int parse_step(const std::string& text, size_t begin, size_t end) {
  if (begin >= end || end - begin > 9) return -1;
  int value = 0;
  for (size_t i = begin; i < end; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}
}  // namespace

std::string StepRange::str() const { return std::to_string(first) + "-" + std::to_string(last); }

bool parse_step_range(const std::string& text, StepRange* out, std::string* error) {
  *out = StepRange{};
  if (text.empty()) return true;
  const size_t dash = text.find('-');
  const int first = parse_step(text, 0, dash == std::string::npos ? text.size() : dash);
  const int last = dash == std::string::npos ? first : parse_step(text, dash + 1, text.size());
  if (first < 0 || last < 0) {
    *error = "\"" + text + "\" is not a step range: use \"A-B\" or \"N\" with decimal step numbers";
    return false;
  }
  if (first < 1) {
    *error = "steps are counted from 1 (as in metrics.jsonl), got \"" + text + "\"";
    return false;
  }
  if (last < first) {
    *error = "\"" + text + "\" ends before it starts";
    return false;
  }
  *out = StepRange{first, last};
  return true;
}

}  // namespace tt
