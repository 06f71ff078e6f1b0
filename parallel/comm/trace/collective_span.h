// A collective as a span of a traced step: on the trace's collectives lane, from when it could be
// seen to start to when its Work reported completion, with its bytes, algorithm, payload and a
// per-rank sequence number.
//
// Design: a Work handle tells when it was issued and how long it was in flight (issue to observed
// completion), not when the backend began moving bytes, and backends keep several nonblocking
// collectives in flight at once. So the span is [issue, completion]; spans that overlap are spread
// over sub-lanes when the trace is written (trace_events.h: spread_overlapping). The sequence
// number counts the collectives recorded by this process since tracing started; every rank
// records the same collectives in the same order, so equal numbers on two ranks name the same
// collective. Callers check trace::enabled() first.
#pragma once

#include <cstdint>
#include <string>

namespace tt::parallel {

struct CollectiveSpan {
  std::string name;       // "bucket 3 all_reduce": the same name in the predicted timeline
  std::string algorithm;  // "all_reduce", "reduce_scatter", "all_to_all", "all_gather"
  std::string payload;    // "fp32", "bf16", "int8"
  int64_t bytes = 0;      // this rank's buffer as passed (before compression for compressed payloads)
  int bucket = -1;
  double issued_s = 0;  // steady clock, seconds
  double end_s = 0;
};

void record_collective(const CollectiveSpan& c);

}  // namespace tt::parallel
