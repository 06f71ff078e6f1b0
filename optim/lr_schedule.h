// Learning-rate schedule: linear warmup from 0 to the peak over `warmup_steps`, then cosine decay to
// peak·min_lr_ratio at the last step (llm.c / GPT-3 style). A pure function of the step.
#pragma once

namespace tt {

struct LrSchedule {
  float peak_lr = 6e-4f;
  float min_lr_ratio = 0.0f;
  int warmup_steps = 0;
  int total_steps = 1;

  // step is 0-based: step 0 of a 10-step warmup uses peak/10, step 9 the peak.
  float lr_at(int step) const;
};

}  // namespace tt
