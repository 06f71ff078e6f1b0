// Warmup + cosine schedule (see lr_schedule.h).
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace tt {

float LrSchedule::lr_at(int step) const {
  if (step < warmup_steps) return peak_lr * float(step + 1) / float(warmup_steps);
  const float min_lr = peak_lr * min_lr_ratio;
  const int decay_steps = total_steps - warmup_steps;
  if (decay_steps <= 1) return peak_lr;
  const double progress = std::min(1.0, double(step - warmup_steps) / double(decay_steps - 1));
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * progress));
  return float(min_lr + coeff * (peak_lr - min_lr));
}

}  // namespace tt
