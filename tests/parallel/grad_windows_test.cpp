// ZeRO-3's gradient windows: a group's window is zeroed when a backward first asks for it and kept
// while backward writes it, resident groups keep theirs, and a window whose gradients no
// reduce-scatter has read yet is never handed to another group.
#include "parallel/ddp/grad_windows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "core/error.h"

namespace tt::parallel {
namespace {

// A reduce-scatter that completes `delay_s` after it is made.
class LaterWork : public Work {
 public:
  explicit LaterWork(double delay_s)
      : start_(std::chrono::steady_clock::now()),
        done_(start_ +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(delay_s))) {
  }
  bool is_completed() override { return std::chrono::steady_clock::now() >= done_; }
  WorkStatus status() override { return is_completed() ? WorkStatus::kCompleted : WorkStatus::kPending; }
  void wait(double) override { std::this_thread::sleep_until(done_); }
  double elapsed_s() override {
    return std::chrono::duration<double>(std::min(std::chrono::steady_clock::now(), done_) - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_, done_;
};

float* grads_of(GradWindows& w, int group) { return static_cast<float*>(w.grads(group)); }

bool all_zero(const float* p, int64_t n) {
  return std::all_of(p, p + n, [](float v) { return v == 0.0f; });
}

TEST(GradWindows, ZeroedPerBackwardAndNeverOverwrittenBeforeTheyAreSent) {
  GradWindows w({{0, 10}, {10, 30}, {30, 45}, {45, 50}}, /*resident=*/{0});
  EXPECT_EQ(w.elements(), 10 + 2 * 20);  // group 0, and twice the largest other group
  w.begin_backward();
  float* emb = grads_of(w, 0);
  std::fill_n(emb, 10, 1.0f);
  float* last = grads_of(w, 3);
  EXPECT_TRUE(all_zero(last, 5));
  std::fill_n(last, 5, 2.0f);
  EXPECT_EQ(grads_of(w, 3), last);  // asked again in the same backward: kept, not zeroed
  EXPECT_EQ(last[4], 2.0f);
  float* two = grads_of(w, 2);
  EXPECT_NE(two, last);
  // Both turn-taking windows hold gradients no reduce-scatter has read: group 1 must not take one.
  EXPECT_THROW(grads_of(w, 1), Error);
  w.reading(3, std::make_shared<LaterWork>(0.05));
  EXPECT_EQ(w.window(3), last);
  EXPECT_EQ(w.take_wait_s(), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  float* one = grads_of(w, 1);  // takes group 3's window once its reduce-scatter has read it
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.045);
  EXPECT_GE(w.take_wait_s(), 0.045);  // counted as waiting (communication)
  EXPECT_EQ(one, last);
  EXPECT_TRUE(all_zero(one, 20));
  EXPECT_THROW(w.window(3), Error);  // no window holds group 3 any more
  EXPECT_EQ(grads_of(w, 0), emb);    // the resident group kept its window and values
  EXPECT_EQ(emb[9], 1.0f);
  w.reading(2, completed_work());
  w.reading(1, completed_work());
  w.reading(0, completed_work());

  w.begin_backward();  // the next backward starts from zero, even for a group still held
  EXPECT_TRUE(all_zero(grads_of(w, 0), 10));
  EXPECT_LT(w.take_wait_s(), 0.01);  // nothing to wait for
}

}  // namespace
}  // namespace tt::parallel
