// Loss curves of one or several runs in one PNG (gnuplot): per run its train loss per step and its
// validation losses, and the synthetic corpus' entropy floor when the first run trained on it.
// `plot` draws one run or several side by side; `compare` draws the runs it compares.
#pragma once

#include <string>
#include <vector>

namespace tt {

// Reads each run's metrics.jsonl (kData naming the file when it cannot), writes the curves to
// `out_png` (a data file per run beside it) and returns a one-line summary. Several runs are told
// apart by their directory names. Train losses are drawn as the mean of `smooth` steps (1: raw).
std::string draw_loss_curves(const std::vector<std::string>& run_dirs, const std::string& out_png, int smooth = 1);

}  // namespace tt
