// "did you mean ...?" for names a user types (config fields, presets, model shapes).
#pragma once

#include <string>
#include <vector>

namespace tt {

// Levenshtein distance, case-folded.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `name` when it is plausibly a typo of it (at most 1 edit for names up to
// 4 characters, 2 up to 8, else 3; a candidate that starts with `name` counts too), else "".
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace tt
