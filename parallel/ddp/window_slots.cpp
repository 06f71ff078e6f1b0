// ZeRO-3 gather window policy (see window_slots.h).
#include "parallel/ddp/window_slots.h"

#include <algorithm>

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

std::vector<int64_t> WindowSlots::buffer_sizes(const std::vector<int64_t>& sizes) const {
  int64_t largest = 1;
  for (int g = 0; g < int(sizes.size()); ++g)
    if (std::none_of(slots_.begin(), slots_.end(), [g](const Slot& s) { return s.resident == g; }))
      largest = std::max(largest, sizes[size_t(g)]);
  std::vector<int64_t> out;
  for (const Slot& s : slots_) {
    TT_ASSERT(s.resident < int(sizes.size()), "resident group ", s.resident, " of ", sizes.size());
    out.push_back(s.resident >= 0 ? std::max<int64_t>(sizes[size_t(s.resident)], 1) : largest);
  }
  return out;
}

std::vector<Tensor> WindowSlots::allocate(const std::vector<int64_t>& sizes, const std::string& name, DType dtype,
                                          Device device) const {
  const std::vector<int64_t> elements = buffer_sizes(sizes);
  std::vector<Tensor> buffers;
  int turn = 0;
  for (size_t s = 0; s < slots_.size(); ++s)
    buffers.push_back(Tensor::zeros(
        slots_[s].resident >= 0 ? str(name, ".resident_group", slots_[s].resident) : str(name, ".window", turn++),
        {elements[s]}, dtype, device));
  return buffers;
}

}  // namespace tt::parallel
