// Nearest names for typos (see did_you_mean.h).
#include "core/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace tt {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

size_t edit_distance(const std::string& a0, const std::string& b0) {
  const std::string a = lower(a0), b = lower(b0);
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  const size_t limit = name.size() <= 4 ? 1 : name.size() <= 8 ? 2 : 3;
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (!best.empty() || name.size() < 3) return best;
  for (const std::string& c : candidates)  // "8x4090" for "8x4090-pcie": a prefix left out the rest
    if (lower(c).rfind(lower(name), 0) == 0) return c;
  return "";
}

}  // namespace tt
