// Collectives as trace spans (see collective_span.h).
#include "parallel/comm/trace/collective_span.h"

#include <algorithm>
#include <mutex>

#include "core/trace_recorder.h"

namespace tt::parallel {

void record_collective(const CollectiveSpan& c) {
  if (!trace::enabled()) return;
  static std::mutex mutex;
  static int64_t seq = 0, numbered_session = -1;
  const int64_t issued = int64_t(c.issued_s * 1e9), end = int64_t(c.end_s * 1e9);
  trace::Args args;
  {
    std::lock_guard<std::mutex> lock(mutex);
    // A new recording (trace::start()) numbers its collectives from 1 again.
    if (trace::session() != numbered_session) {
      numbered_session = trace::session();
      seq = 0;
    }
    args.add("seq", ++seq);
  }
  args.add("bytes", c.bytes).add("algorithm", c.algorithm).add("payload", c.payload);
  if (c.bucket >= 0) args.add("bucket", c.bucket);
  trace::record(
      trace::Span{c.name, "comm", issued, std::max<int64_t>(end - issued, 0), trace::kCollectiveLane, args.str()});
}

}  // namespace tt::parallel
