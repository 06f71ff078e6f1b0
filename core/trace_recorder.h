// The process-wide span recorder behind `train.trace_steps` and `bench step --trace`: timed spans
// (name, category, start, duration, lane, arguments) that trace_events.h writes as a Chrome trace.
//
// Design: tracing is off almost always, so every span site first reads one relaxed atomic bool
// (trace::enabled(), inlined) and does nothing else when it is false: no clock read, no allocation,
// no lock. When on, spans are appended under a mutex (collective threads record too) with times
// from the steady clock in nanoseconds, the clock the clock-offset exchange aligns across ranks.
// A span lives on a lane, a Chrome "thread": the recording thread's own (numbered in order of
// first use, named by name_this_thread) or a fixed virtual lane for things that overlap the
// thread that saw them (collectives in flight during backward, device-side phases), so spans on a
// lane never cross and Chrome/Perfetto draw them nested. Arguments are a JSON object's text,
// built only on the enabled path.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tt::trace {

// Fixed lanes for spans that overlap their recording thread's spans.
constexpr int kCollectiveLane = 1000;  // gradient buckets' collectives as they are in flight (overlapping
                                       // ones spread over 1001, 1002, ... when written: trace_events.h)
constexpr int kDeviceLane = 2000;      // device-side phases timed with CUDA events

struct Span {
  std::string name;
  std::string category;  // "step", "data", "forward", "backward", "comm", "optimizer", "checkpoint", "device"
  int64_t start_ns = 0;  // steady clock
  int64_t duration_ns = 0;
  int lane = 0;
  std::string args;  // a JSON object's text ("{...}"), or "" for none
};

namespace detail {
extern std::atomic<bool> g_enabled;
}

// Whether spans are being recorded: the one check every span site makes.
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

int64_t now_ns();  // the steady clock, in nanoseconds

// Starts recording (clearing what was recorded before) / stops it; take() hands over the spans.
void start();
void stop();
std::vector<Span> take();
// Counts start() calls: per-recording state elsewhere (sequence numbers) resets when it changes.
int64_t session();
// The lanes named so far: (lane, name), including the virtual ones.
std::vector<std::pair<int, std::string>> lane_names();

// The calling thread's lane, named `name` in the trace ("main", "prefetch").
void name_this_thread(const std::string& name);
int this_thread_lane();

// Appends a finished span (no-op when disabled).
void record(Span span);

// Builds a span's JSON arguments: Args().add("bytes", 1024).add("algorithm", "all_reduce").str().
class Args {
 public:
  Args& add(const char* key, int64_t value);
  Args& add(const char* key, int value) { return add(key, int64_t(value)); }
  Args& add(const char* key, double value);
  Args& add(const char* key, const std::string& value);
  Args& add(const char* key, const char* value) { return add(key, std::string(value)); }
  std::string str() const { return text_.empty() ? std::string() : text_ + "}"; }

 private:
  void key(const char* k);
  std::string text_;
};

// A span from construction to destruction on this thread's lane; inert when tracing is off (its
// whole state is one null pointer then: nothing to construct or destroy).
class ScopedSpan {
 public:
  ScopedSpan(const char* name, const char* category) {
    if (enabled()) begin(name, category);
  }
  // Names with a number ("block 3") are built only when tracing is on.
  ScopedSpan(const char* prefix, int index, const char* category) {
    if (enabled()) begin(std::string(prefix) + " " + std::to_string(index), category);
  }
  ~ScopedSpan() {
    if (open_) end();
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;
  bool active() const { return open_ != nullptr; }
  void set_args(std::string args) {
    if (open_) open_->args = std::move(args);
  }

 private:
  void begin(std::string name, const char* category);
  void end();
  std::unique_ptr<Span> open_;  // the span being timed (start set, duration at the end)
};

}  // namespace tt::trace
