// A range of training steps named in a config ("20-22" or "7"), 1-based as in metrics.jsonl.
//
// Design: a pure parser shared by config validation (which turns its error into a config problem
// naming the field) and the trainer (which asks whether a step is in the range), so both agree on
// what a string means.
#pragma once

#include <string>

namespace tt {

struct StepRange {
  int first = 0;  // 1-based, inclusive; 0 = no range
  int last = 0;   // inclusive, >= first

  bool empty() const { return first == 0; }
  bool contains(int step_1based) const { return !empty() && step_1based >= first && step_1based <= last; }
  std::string str() const;  // "20-22" (also "7-7" for a single step, so file names are uniform)
};

// "" -> an empty range; "N" -> N-N; "A-B" with 1 <= A <= B. Returns false and sets *error to what is
// wrong (without the field name) for anything else.
bool parse_step_range(const std::string& text, StepRange* out, std::string* error);

}  // namespace tt
