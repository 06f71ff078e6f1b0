// StagePipeline on data: Works whose completion the test controls show that a bucket's next stage
// is issued only after its previous stage completed, that every stage issues its buckets in bucket
// order whatever the completion order (the rule that keeps per-communicator collective order equal
// on every rank), and that finish() issues and waits for the rest.
#include "parallel/ddp/stage_pipeline.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace tt::parallel {
namespace {

class ManualWork : public Work {
 public:
  bool is_completed() override { return done; }
  WorkStatus status() override { return done ? WorkStatus::kCompleted : WorkStatus::kPending; }
  void wait(double) override { done = true; }  // "waiting" completes it: the test drives time
  double elapsed_s() override { return 0.001; }
  bool done = false;
};

struct Recorder {
  std::vector<std::pair<int, size_t>> issued;  // (stage, bucket) in issue order
  std::vector<std::vector<std::shared_ptr<ManualWork>>> works;
  explicit Recorder(int stages, size_t buckets)
      : works(size_t(stages), std::vector<std::shared_ptr<ManualWork>>(buckets)) {}
  StagePipeline::Issue issue() {
    return [this](int stage, size_t bucket) {
      issued.push_back({stage, bucket});
      works[size_t(stage)][bucket] = std::make_shared<ManualWork>();
      return works[size_t(stage)][bucket];
    };
  }
  bool has(int stage, size_t bucket) const {
    for (const auto& p : issued)
      if (p.first == stage && p.second == bucket) return true;
    return false;
  }
};

TEST(StagePipeline, NextStageOnlyAfterPreviousAndInBucketOrderPerStage) {
  Recorder rec(3, 3);
  StagePipeline p(3, rec.issue());
  p.begin(3);
  p.start(0);
  p.start(1);
  EXPECT_FALSE(p.advance());  // nothing completed yet
  // Bucket 1's first stage completes before bucket 0's: stage 1 must still wait for bucket 0.
  rec.works[0][1]->done = true;
  EXPECT_FALSE(p.advance());
  EXPECT_FALSE(rec.has(1, 1));
  rec.works[0][0]->done = true;
  EXPECT_TRUE(p.advance());
  EXPECT_TRUE(rec.has(1, 0));
  EXPECT_TRUE(rec.has(1, 1));
  EXPECT_FALSE(rec.has(2, 0));
  p.start(2);
  rec.works[1][0]->done = true;
  p.advance();
  EXPECT_TRUE(rec.has(2, 0));
  EXPECT_FALSE(rec.has(2, 1));

  std::vector<StagePipeline::Span> spans;
  p.finish(spans);
  EXPECT_EQ(rec.issued.size(), 9u);
  EXPECT_EQ(spans.size(), 9u);
  // Per stage, buckets were issued in order 0, 1, 2.
  for (int s = 0; s < 3; ++s) {
    size_t next = 0;
    for (const auto& [stage, bucket] : rec.issued)
      if (stage == s) EXPECT_EQ(bucket, next++) << "stage " << s;
  }
  // Every (stage, bucket) was issued after (stage - 1, bucket).
  for (size_t i = 0; i < rec.issued.size(); ++i) {
    const auto [stage, bucket] = rec.issued[i];
    if (stage == 0) continue;
    bool before = false;
    for (size_t j = 0; j < i; ++j) before = before || rec.issued[j] == std::make_pair(stage - 1, bucket);
    EXPECT_TRUE(before) << "stage " << stage << " bucket " << bucket;
  }
  // Spans are absolute steady-clock seconds (since boot: ~1e6 after ten days, 1e-10 s apart), so
  // their difference is exact only to a few ulps of that.
  for (const auto& sp : spans) EXPECT_NEAR(sp.end_s - sp.issued_s, 0.001, 1e-8);
  // Spans come stage by stage, in bucket order (the order every rank traces them in).
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i].stage, int(i / 3)) << i;
    EXPECT_EQ(spans[i].bucket, i % 3) << i;
  }
}

// Not eager (NCCL): completions during backward issue nothing, and finish() issues every later stage
// bucket by bucket, stage by stage: one order on every rank, whatever completed first.
TEST(StagePipeline, NotEagerIssuesLaterStagesInOneFixedOrder) {
  Recorder rec(3, 2);
  StagePipeline p(3, rec.issue(), /*eager=*/false);
  p.begin(2);
  p.start(0);
  p.start(1);
  rec.works[0][1]->done = true;
  rec.works[0][0]->done = true;
  EXPECT_FALSE(p.advance());
  EXPECT_EQ(rec.issued.size(), 2u);
  std::vector<StagePipeline::Span> spans;
  p.finish(spans);
  const std::vector<std::pair<int, size_t>> want = {{0, 0}, {0, 1}, {1, 0}, {2, 0}, {1, 1}, {2, 1}};
  EXPECT_EQ(rec.issued, want);
  EXPECT_EQ(spans.size(), 6u);
}

TEST(StagePipeline, RoundsRepeatAndCompletedWorkIsDone) {
  Recorder rec(2, 2);
  StagePipeline p(2, rec.issue());
  for (int round = 0; round < 2; ++round) {
    rec.issued.clear();
    p.begin(2);
    p.start(0);
    p.start(1);
    std::vector<StagePipeline::Span> spans;
    p.finish(spans);
    EXPECT_EQ(rec.issued.size(), 4u) << "round " << round;
  }
  EXPECT_TRUE(completed_work()->is_completed());
  EXPECT_EQ(completed_work()->status(), WorkStatus::kCompleted);
}

}  // namespace
}  // namespace tt::parallel
