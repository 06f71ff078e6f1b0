// The precision parity check behind `topotrain compare`: runs that differ only in their numerics
// (matmul precision, gradient payload) against a baseline run, on their metrics.jsonl.
//
// Design: pure functions of the runs' records, unit-tested on data. A run passes when its final
// validation loss (or, without validation, the mean train loss of its last window) is within
// `tolerance` of the baseline's, relatively, and its worst window of mean train loss (windows of
// `window` steps, after the first `skip` fraction of the run, where loss falls too fast for a
// step's difference to mean anything) is within `window_tolerance`. Short parity is not enough for
// fp8 (published runs with SwiGLU diverged late, preceded by growing activation outliers), so every
// run's fp8 statistics are scanned for trends: an absmax whose median in the last quarter of the
// scanned steps is more than `growth` times its median in the first quarter, and saturations that
// rise from the first quarter to the last, are flagged.
#pragma once

#include <string>
#include <vector>

#include "launch/run_metrics.h"

namespace tt {

struct RunCurve {
  std::string name;  // the run directory
  std::vector<MetricsRecord> records;
};

struct ParityOptions {
  double tolerance = 0.015;        // final loss, relative (1.5%)
  double window_tolerance = 0.05;  // worst window of mean train loss, relative
  int window = 50;                 // steps per window
  double skip = 0.1;               // fraction of the steps left out of the window scan and the trends
  double growth = 2.0;             // absmax median ratio (last / first quarter) that is flagged
};

struct RunParity {
  std::string name;
  double final_loss = 0;  // validation loss at the last step that has one, else the last window's mean
  bool final_is_val = false;
  double final_gap = 0;            // (final - baseline final) / baseline final
  double worst_window_gap = 0;     // the largest |gap| of a window's mean train loss, signed
  int64_t worst_window_end = 0;    // the step that window ends at
  bool pass = true;                // within both tolerances (the baseline passes by definition)
  std::vector<std::string> flags;  // trends: "fp8_amax_dy grew 3.4x (median of the last quarter vs the first)"
};

// runs[0] is the baseline. Throws tt::Error(kData) naming the run when it has no loss or its steps
// do not overlap the baseline's.
std::vector<RunParity> compare_runs(const std::vector<RunCurve>& runs, const ParityOptions& options);

// The trend flags of one run's fp8 statistics (empty without them).
std::vector<std::string> fp8_trend_flags(const std::vector<MetricsRecord>& records, const ParityOptions& options);

}  // namespace tt
