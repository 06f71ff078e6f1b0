// The span recorder (see trace_recorder.h).
#include "core/trace_recorder.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>

#include "core/json_writer.h"

namespace tt::trace {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {
struct Recorder {
  std::mutex mutex;
  std::vector<Span> spans;
  std::map<int, std::string> lane_names{{kCollectiveLane, "collectives"}, {kDeviceLane, "device (CUDA events)"}};
  int next_lane = 1;
  std::atomic<int64_t> session{0};
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: threads may record during static destruction
  return *r;
}

// JSON string literal of `s`.
std::string quoted(const std::string& s) { return "\"" + json_escape(s) + "\""; }
}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void start() {
  Recorder& r = recorder();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.spans.clear();
  }
  r.session.fetch_add(1);
  detail::g_enabled.store(true, std::memory_order_relaxed);
}

int64_t session() { return recorder().session.load(); }

void stop() { detail::g_enabled.store(false, std::memory_order_relaxed); }

std::vector<Span> take() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<Span> out;
  out.swap(r.spans);
  return out;
}

std::vector<std::pair<int, std::string>> lane_names() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  return {r.lane_names.begin(), r.lane_names.end()};
}

int this_thread_lane() {
  thread_local int lane = 0;
  if (lane == 0) {
    Recorder& r = recorder();
    std::lock_guard<std::mutex> lock(r.mutex);
    lane = r.next_lane++;
    r.lane_names.emplace(lane, "thread " + std::to_string(lane));
  }
  return lane;
}

void name_this_thread(const std::string& name) {
  const int lane = this_thread_lane();
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.lane_names[lane] = name;
}

void record(Span span) {
  if (!enabled()) return;
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.spans.push_back(std::move(span));
}

void Args::key(const char* k) {
  text_ += text_.empty() ? "{" : ",";
  text_ += quoted(k) + ":";
}

Args& Args::add(const char* k, int64_t value) {
  key(k);
  text_ += std::to_string(value);
  return *this;
}

Args& Args::add(const char* k, double value) {
  key(k);
  if (!std::isfinite(value)) {  // JSON has no NaN or infinity
    text_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  text_ += buf;
  return *this;
}

Args& Args::add(const char* k, const std::string& value) {
  key(k);
  text_ += quoted(value);
  return *this;
}

void ScopedSpan::begin(std::string name, const char* category) {
  open_ = std::make_unique<Span>();
  open_->name = std::move(name);
  open_->category = category;
  open_->lane = this_thread_lane();
  open_->start_ns = now_ns();
}

void ScopedSpan::end() {
  open_->duration_ns = now_ns() - open_->start_ns;
  record(std::move(*open_));
  open_.reset();
}

}  // namespace tt::trace
