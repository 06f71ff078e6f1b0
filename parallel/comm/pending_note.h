// Process-wide record of the oldest collective in flight, kept pre-formatted so a signal handler
// can print it (write_pending_collective_note in communicator.h). Backends publish with
// set_pending_collective() from their communication thread and clear it when nothing is pending.
//
// Design: two fixed buffers and an atomic index (a writer fills the idle one, then flips), so the
// reader never sees a torn line and never allocates or locks.
#pragma once

#include <string>

namespace tt::parallel {

// description: "all_reduce #17 (step 42, 1.0 MiB f32)"; start_ns: CLOCK_MONOTONIC nanoseconds.
// owner: the publishing communicator (several run at once with split()); writers are serialised,
// and clear_pending_collective(owner) clears only that owner's note (nullptr: whatever is there).
void set_pending_collective(int rank, const std::string& description, long long start_ns, const void* owner = nullptr);
void clear_pending_collective(const void* owner = nullptr);
long long monotonic_ns();

}  // namespace tt::parallel
