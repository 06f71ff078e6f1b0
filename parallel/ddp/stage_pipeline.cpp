// StagePipeline (see stage_pipeline.h).
#include "parallel/ddp/stage_pipeline.h"

#include <chrono>

#include "core/error.h"

namespace tt::parallel {

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

StagePipeline::StagePipeline(int stages, Issue issue, bool eager)
    : stages_(stages), issue_(std::move(issue)), eager_(eager) {
  TT_ASSERT(stages >= 1, "a pipeline needs at least one stage");
  work_.resize(size_t(stages));
  issued_at_.resize(size_t(stages));
  next_.assign(size_t(stages), 0);
}

void StagePipeline::begin(size_t buckets) {
  for (int s = 0; s < stages_; ++s) {
    TT_ASSERT(work_[size_t(s)].empty(), "StagePipeline::begin() before the previous round's finish()");
    work_[size_t(s)].assign(buckets, nullptr);
    issued_at_[size_t(s)].assign(buckets, 0.0);
  }
  next_.assign(size_t(stages_), 0);
  buckets_ = buckets;
}

void StagePipeline::issue(int stage, size_t bucket) {
  TT_ASSERT(next_[size_t(stage)] == bucket, "stage ", stage, " issues bucket ", bucket, " out of order");
  issued_at_[size_t(stage)][bucket] = now_s();
  work_[size_t(stage)][bucket] = issue_(stage, bucket);
  TT_ASSERT(work_[size_t(stage)][bucket] != nullptr, "stage ", stage, " returned no Work");
  ++next_[size_t(stage)];
}

void StagePipeline::start(size_t bucket) {
  TT_ASSERT(bucket < buckets_, "bucket ", bucket, " of ", buckets_);
  issue(0, bucket);
}

bool StagePipeline::advance() {
  if (!eager_) return false;  // finish() issues every later stage, in its fixed order
  bool issued = false;
  for (int s = 1; s < stages_; ++s) {
    size_t& b = next_[size_t(s)];
    while (b < next_[size_t(s - 1)] && work_[size_t(s - 1)][b]->is_completed()) {
      issue(s, b);
      issued = true;
    }
  }
  return issued;
}

void StagePipeline::finish(std::vector<Span>& spans) {
  const size_t started = next_[0];
  for (size_t b = 0; b < started; ++b)
    for (int s = 1; s < stages_; ++s) {
      if (next_[size_t(s)] > b) continue;
      work_[size_t(s - 1)][b]->wait();
      issue(s, b);
      advance();  // later buckets whose predecessors completed meanwhile
    }
  for (int s = 0; s < stages_; ++s)
    for (size_t b = 0; b < started; ++b) {
      Work& w = *work_[size_t(s)][b];
      w.wait();
      const double t0 = issued_at_[size_t(s)][b];
      spans.push_back({s, b, t0, t0 + w.elapsed_s()});
    }
  for (int s = 0; s < stages_; ++s) {
    work_[size_t(s)].clear();
    issued_at_[size_t(s)].clear();
  }
  next_.assign(size_t(stages_), 0);
  buckets_ = 0;
}

}  // namespace tt::parallel
