// CPU codec timing (see codec_probe.h).
#include "parallel/topology/codec_probe.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace tt::topology {

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

CodecMeasurement measure_codec(parallel::GradCompression payload, int64_t elements, int iters) {
  TT_ASSERT(payload != parallel::GradCompression::kNone && elements > 0 && iters >= 1, "measure_codec arguments");
  const size_t n = size_t(elements);
  std::vector<float> g(n, 0.0f), residual(n, 0.0f), acc(n, 0.0f);
  for (int64_t i = 0; i < elements; ++i) g[size_t(i)] = 1e-3f * std::sin(0.37f * float(i));  // gradient-like
  std::vector<uint8_t> wire(parallel::compressed_bytes(elements, payload));
  double compress_s = 0, decompress_s = 0;
  for (int it = 0; it <= iters; ++it) {  // pass 0 is the untimed warm-up
    const double t0 = now_s();
    parallel::compress_with_feedback(g.data(), residual.data(), elements, payload, wire.data());
    const double t1 = now_s();
    parallel::decompress_add(wire.data(), elements, payload, 0.5f, acc.data());
    const double t2 = now_s();
    if (it == 0) continue;
    compress_s += t1 - t0;
    decompress_s += t2 - t1;
  }
  const double bytes = 4.0 * double(elements) * iters;
  CodecMeasurement m;
  m.set_payload(parallel::grad_compression_name(payload));
  m.set_compress_gbps(compress_s > 0 ? bytes / compress_s / 1e9 : 0);
  m.set_decompress_add_gbps(decompress_s > 0 ? bytes / decompress_s / 1e9 : 0);
  m.set_elements(uint64_t(elements));
  m.set_threads(omp_get_max_threads());
  return m;
}

}  // namespace tt::topology
