// Shared by the end-to-end data-parallel suites: the `topotrain train` arguments (<arch>-tiny-synth,
// GPT-2 or Llama, on the synthetic data under dir/data, 12 steps of batch 4, logging every 4 steps
// into dir/run_dir), the fixture that writes that data, and the check that bucket communication
// overlaps backward.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/test_util.h"

namespace tt::test {

// Writes the synthetic data set (vocab 16) under dir_/data before each test.
class TinyTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r =
        run_topotrain("data synth --out " + dir_.file("data") +
                      " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 300000 --val-tokens 40000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  TempDir dir_;
};

// The architectures the end-to-end suites run for (examples/<arch>-tiny-synth.pbtxt).
inline const char* const kTinyArchs[] = {"gpt2", "llama"};

// "train --config ... --set parallel.timeout_s=60 " (ends in a space), followed by `extra`.
inline std::string tiny_train_args(const TempDir& dir, const std::string& run_dir, int val_every,
                                   const std::string& extra, const std::string& arch = "gpt2") {
  return "train --config " + source_dir() + "/examples/" + arch + "-tiny-synth.pbtxt" +
         " --set data.train=" + dir.file("data/train.bin") + " --set data.val=" + dir.file("data/val.bin") +
         " --set logging.run_dir=" + dir.file(run_dir) +
         " --set model.vocab_size=16 --set train.batch_size=4 --set train.steps=12" +
         " --set optimizer.warmup_steps=3 --set train.log_every=4 --set train.val_every=" + std::to_string(val_every) +
         " --set checkpoint.every=0 --set parallel.timeout_s=60 " + extra;
}

// For an 8-step run with a 2 ms injected delay per collective and ~32 buckets: past the first
// (warm-up) step the delay shows up as communication time, and the step waits for far less of it.
inline void expect_comm_overlaps_backward(const std::map<int, StepMetrics>& metrics, const std::string& output) {
  double comm = 0, exposed = 0;
  for (const auto& [step, rec] : metrics)
    if (step > 1) {  // the first step warms up
      comm += rec.comm_s;
      exposed += rec.exposed_comm_s;
    }
  EXPECT_GT(comm, 7 * 32 * 0.002) << "the injected delay must show up as communication time";
  EXPECT_LT(exposed, 0.6 * comm) << "comm " << comm << " s, exposed " << exposed << " s\n" << output;
}

}  // namespace tt::test
