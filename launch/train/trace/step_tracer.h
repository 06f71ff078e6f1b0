// Records a range of training steps on every rank and writes them as one Chrome trace on rank 0
// (`train.trace_steps`, `bench step --trace FILE`).
//
// Design: the trainer calls before_step / after_step around every step (1-based numbers); both
// are collective only at the range's ends, which every rank reaches at the same step, so the
// ranks agree without extra messages. At the first step of the range the ranks measure their
// clock offsets to rank 0 (parallel/comm/trace/clock_offsets.h) and start the span recorder
// (core/trace_recorder.h); after the last one they stop it, every rank's spans travel to rank 0
// (gather_texts) and rank 0 writes one trace-event file (core/trace_events.h): one process per
// rank with its spans moved onto rank 0's clock, and the offsets, their round trips and the
// steps in "otherData". finish() closes a range the run left early (stopped by a signal, fewer
// steps than the range). Outside the range nothing here costs more than a comparison.
#pragma once

#include <string>
#include <vector>

#include "core/step_range.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/trace/clock_offsets.h"

namespace tt {

class StepTracer {
 public:
  // out_path: the trace file rank 0 writes (its directory is created); range empty: never traces.
  StepTracer(const StepRange& range, std::string out_path, parallel::Communicator& comm);
  ~StepTracer();
  StepTracer(const StepTracer&) = delete;
  StepTracer& operator=(const StepTracer&) = delete;

  void before_step(int step_1based);
  void after_step(int step_1based);
  void finish();  // collective when a range is being recorded; a no-op otherwise

  bool recording() const { return recording_; }
  const std::string& path() const { return out_path_; }

 private:
  void write_trace();

  StepRange range_;
  std::string out_path_;
  parallel::Communicator& comm_;
  bool recording_ = false;
  int first_recorded_ = 0, last_recorded_ = 0;
  std::vector<parallel::ClockOffset> offsets_;
};

// "<run_dir>/trace/steps_A-B.json" and its predicted sibling "<run_dir>/trace/steps_A-B.predicted.json".
std::string trace_path(const std::string& run_dir, const StepRange& range);
std::string predicted_trace_path(const std::string& run_dir, const StepRange& range);

}  // namespace tt
