// ZeRO-3's windows as a policy, shared by ShardedParams (which fills them with gathered parameters),
// GradWindows (gradients) and the cost model's ZeRO-3 simulation (which times the parameter
// gathers), so they cannot drift:
// resident groups get a slot of their own; the others take turns in two slots, the least recently
// used first, never the one holding `keep` (the group in use while the next one is gathered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tt::parallel {

class WindowSlots {
 public:
  explicit WindowSlots(const std::vector<int>& resident);

  int size() const { return int(slots_.size()); }  // resident slots first, then the two that take turns
  int resident_group(int slot) const { return slots_[size_t(slot)].resident; }  // -1: a turn-taking slot
  // The slot holding (or receiving) group, or -1.
  int holding(int group) const;
  // Where group goes: its own slot if resident, else the least recently used turn-taking slot that
  // does not hold `keep` (-1: none).
  int slot_for(int group, int keep) const;
  void fill(int slot, int group);  // the slot now holds group
  void touch(int slot);            // the slot's group was just used
  void clear();                    // no slot holds anything (the shards changed)

  // Elements of each slot's buffer: a resident slot's as large as its group, a turn-taking one's as
  // the largest other group (at least 1). sizes[g]: group g's elements.
  std::vector<int64_t> buffer_sizes(const std::vector<int64_t>& sizes) const;
  // A zeroed buffer of `dtype` on `device` per slot, of buffer_sizes, named "<name>.resident_group<g>" /
  // "<name>.window<i>".
  std::vector<Tensor> allocate(const std::vector<int64_t>& sizes, const std::string& name, DType dtype,
                               Device device) const;

 private:
  struct Slot {
    int resident = -1, group = -1;
    uint64_t last_used = 0;
  };
  std::vector<Slot> slots_;
  uint64_t tick_ = 0;
};

}  // namespace tt::parallel
