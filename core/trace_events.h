// Chrome trace-event JSON (the format chrome://tracing and Perfetto open) from recorded spans, and
// the compact form in which a rank's spans travel to rank 0.
//
// Design: one process (pid) per rank or per predicted timeline, named by "M" metadata events
// (process_name, process_sort_index, thread_name, thread_sort_index); every span is one "X"
// complete event with microsecond ts/dur relative to a common origin, so ranks line up once each
// rank's clock offset has been subtracted. Whatever the caller wants recorded about the trace as a
// whole (steps, clock offsets) goes into the top-level "otherData" object, which the viewers
// ignore and tests read. Written with nlohmann::json, so every string is escaped correctly.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/trace_recorder.h"

namespace tt::trace {

// One process of the trace: a rank's spans (or a predicted timeline) and its lane names.
struct TraceProcess {
  int pid = 0;
  std::string name;  // "rank 0"
  std::vector<std::pair<int, std::string>> lanes;
  std::vector<Span> spans;
  int64_t clock_offset_ns = 0;  // this process's clock minus the reference clock; subtracted from every span
};

// Spreads the spans of `lane` that overlap in time over lanes lane, lane + 1, ... (each span to the
// first one free at its start), naming the extra lanes "<name> 2", "<name> 3": viewers nest spans of
// one lane by time, so overlapping collectives on one lane would be drawn as parent and child.
void spread_overlapping(TraceProcess& process, int lane);

// {"traceEvents":[...], "displayTimeUnit":"ms", "otherData":<other_data_json>}; times are relative
// to the earliest corrected span start. other_data_json is a JSON object's text ("" for {}).
std::string chrome_trace_json(const std::vector<TraceProcess>& processes, const std::string& other_data_json);

// A process's lanes and spans as JSON text, and back (for the gather to rank 0). Throws
// tt::Error(kInternal) on text that is not such a JSON document.
std::string process_to_json(const TraceProcess& process);
TraceProcess process_from_json(const std::string& text);

}  // namespace tt::trace
