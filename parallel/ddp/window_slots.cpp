// ZeRO-3 gather window policy (see window_slots.h).
#include "parallel/ddp/window_slots.h"

#include "core/error.h"

namespace tt::parallel {

WindowSlots::WindowSlots(const std::vector<int>& resident) {
  for (int g : resident) {
    TT_ASSERT(g >= 0, "resident group ", g);
    slots_.push_back({g, -1, 0});
  }
  slots_.resize(slots_.size() + 2);
}

int WindowSlots::holding(int group) const {
  for (size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s].group == group) return int(s);
  return -1;
}

int WindowSlots::slot_for(int group, int keep) const {
  int best = -1;
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& c = slots_[s];
    if (c.resident == group) return int(s);
    if (c.resident < 0 && (keep < 0 || c.group != keep) && (best < 0 || c.last_used < slots_[size_t(best)].last_used))
      best = int(s);
  }
  return best;
}

void WindowSlots::fill(int slot, int group) { slots_[size_t(slot)].group = group; }

void WindowSlots::touch(int slot) { slots_[size_t(slot)].last_used = ++tick_; }

void WindowSlots::clear() {
  for (Slot& s : slots_) s.group = -1;
}

}  // namespace tt::parallel
