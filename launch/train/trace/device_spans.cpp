// Device-side phases from the step's events (see device_spans.h).
#include "launch/train/trace/device_spans.h"

#include "core/trace_recorder.h"

namespace tt {

void record_device_spans(DeviceTimer& timer, int accum_steps, int64_t anchor_ns) {
  if (!trace::enabled()) return;
  auto phase = [&](const char* name, size_t from, size_t to) {
    const int64_t start = anchor_ns + int64_t(timer.seconds(0, from) * 1e9);
    const int64_t duration = int64_t(timer.seconds(from, to) * 1e9);
    trace::record(trace::Span{name, "device", start, duration, trace::kDeviceLane, ""});
  };
  for (int m = 0; m < accum_steps; ++m) {
    const size_t mark = size_t(3 * m);
    phase("forward (device)", mark, mark + 1);
    phase("backward (device)", mark + 1, mark + 2);
  }
  const size_t opt = size_t(3 * accum_steps);
  phase("optimizer (device)", opt, opt + 1);
}

}  // namespace tt
