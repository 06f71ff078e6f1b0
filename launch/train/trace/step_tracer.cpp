// Step-range tracing on every rank, merged on rank 0 (see step_tracer.h).
#include "launch/train/trace/step_tracer.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/logging.h"
#include "core/trace_events.h"
#include "core/trace_recorder.h"
#include "parallel/comm/trace/gather_texts.h"

namespace tt {

std::string trace_path(const std::string& run_dir, const StepRange& range) {
  return run_dir + "/trace/steps_" + range.str() + ".json";
}

std::string predicted_trace_path(const std::string& run_dir, const StepRange& range) {
  return run_dir + "/trace/steps_" + range.str() + ".predicted.json";
}

StepTracer::StepTracer(const StepRange& range, std::string out_path, parallel::Communicator& comm)
    : range_(range), out_path_(std::move(out_path)), comm_(comm) {
  if (!range_.empty()) trace::name_this_thread("main");
}

StepTracer::~StepTracer() {
  if (recording_) trace::stop();  // an exception ended the run: leave the recorder off
}

void StepTracer::before_step(int step) {
  if (recording_ || !range_.contains(step)) return;
  // Also a resumed run that starts inside the range: it records the rest of it.
  offsets_ = parallel::measure_clock_offsets(comm_);
  recording_ = true;
  first_recorded_ = step;
  trace::start();
}

void StepTracer::after_step(int step) {
  if (!recording_) return;
  last_recorded_ = step;
  if (step >= range_.last) finish();
}

void StepTracer::finish() {
  if (!recording_) return;
  trace::stop();
  recording_ = false;
  write_trace();
}

void StepTracer::write_trace() {
  trace::TraceProcess mine;
  mine.pid = comm_.rank();
  mine.name = "rank " + std::to_string(comm_.rank());
  mine.lanes = trace::lane_names();
  mine.spans = trace::take();
  const std::vector<std::string> texts = parallel::gather_texts(comm_, trace::process_to_json(mine));
  if (comm_.rank() != 0) return;
  std::vector<trace::TraceProcess> processes;
  nlohmann::json offsets_us = nlohmann::json::array(), rtt_us = nlohmann::json::array(),
                 shared = nlohmann::json::array();
  for (int r = 0; r < int(texts.size()); ++r) {
    processes.push_back(r == 0 ? std::move(mine) : trace::process_from_json(texts[size_t(r)]));
    const parallel::ClockOffset& o = offsets_[size_t(r)];
    processes.back().clock_offset_ns = o.offset_ns;
    trace::spread_overlapping(processes.back(), trace::kCollectiveLane);
    offsets_us.push_back(double(o.offset_ns) / 1e3);
    rtt_us.push_back(double(o.rtt_ns) / 1e3);
    shared.push_back(r == 0 || o.shared_clock);
  }
  const nlohmann::json other{{"steps", range_.str()},
                             {"first_step", first_recorded_},
                             {"last_step", last_recorded_},
                             {"ranks", comm_.size()},
                             {"clock",
                              "steady clock of each rank, moved onto rank 0's by clock_offsets_us "
                              "(0 where clock_shared: the same host's clock; else measured)"},
                             {"clock_offsets_us", offsets_us},
                             {"clock_rtt_us", rtt_us},
                             {"clock_shared", shared}};
  try {
    const std::string parent = std::filesystem::path(out_path_).parent_path().string();
    if (!parent.empty()) ensure_dir(parent);
    atomic_write_string(out_path_, trace::chrome_trace_json(processes, other.dump()));
  } catch (const Error& e) {  // the run itself is fine: say so and go on
    log_warn("cannot write the trace of steps ", first_recorded_, "-", last_recorded_, " (", e.what(), ")");
    return;
  }
  size_t spans = 0;
  for (const auto& p : processes) spans += p.spans.size();
  log_info("trace of steps ", first_recorded_, "-", last_recorded_, " (", spans, " spans, ", processes.size(),
           " ranks): ", out_path_, " (open in https://ui.perfetto.dev or chrome://tracing)");
}

}  // namespace tt
