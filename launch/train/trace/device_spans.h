// Device-side phases of a traced step (forward, backward per micro-step, the optimizer) on the
// trace's device lane, from the CUDA events the trainer's DeviceTimer records anyway.
//
// Design: no profiler and no extra events: the step's DeviceTimer marks are the points 3m (before
// micro-step m's forward), 3m + 1 (after it), 3m + 2 (after its backward), 3·accum and 3·accum + 1
// (around the optimizer). Events give durations between marks, not host times, so the lane starts
// at the host time the first mark was recorded (anchor_ns: the earliest the device can have
// reached it) and every phase sits at its event-measured distance from there. Call after the
// optimizer's end mark has been waited for.
#pragma once

#include <cstdint>

#include "core/exec.h"

namespace tt {

void record_device_spans(DeviceTimer& timer, int accum_steps, int64_t anchor_ns);

}  // namespace tt
