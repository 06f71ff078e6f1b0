// Shared by the fault campaigns: a tiny GPT-2 on the synthetic corpus trained by `mpirun -np 2
// topotrain train` (ZeRO-1 by default, checkpoints every few steps, a progress line every step),
// its uninterrupted reference, and the checks that a run which went through faults ended exactly
// where the reference did.
//
// Design: "exactly" means bit for bit. metrics.jsonl writes floats so that they round-trip, so the
// records are compared as text; a resume truncates metrics.jsonl to the checkpoint's step before
// appending (core/metrics.cpp), so a faulted run must end with one record per step, each equal to
// the reference's. The final checkpoint's weights and optimizer state are compared byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tests/test_util.h"

namespace tt::test {

// What distinguishes the runs of one test. Fields that change the numbers (steps, every, ...)
// must match between a faulted run and its reference; timeout_s and keep do not change them.
struct FaultRunSpec {
  int steps = 16;
  int checkpoint_every = 4;
  int checkpoint_keep = 2;
  int zero_stage = 1;
  int val_every = 8;
  double timeout_s = 30;  // parallel.timeout_s
};

// The synthetic corpus under dir_/data, written before each test.
class FaultRunTest : public ::testing::Test {
 protected:
  void SetUp() override;

  // `mpirun -np 2 topotrain train ...` into run_dir (no `timeout` wrapper: callers bound it).
  std::string train_command(const std::string& run_dir, const FaultRunSpec& spec, bool resume) const;
  // Runs spec uninterrupted into dir_/reference (bounded to 180 s); fails the test unless it exits 0.
  // Returns the reference run directory.
  std::string run_reference(const FaultRunSpec& spec);

  TempDir dir_;
};

// Every step 1..steps appears once in run_dir's metrics.jsonl, with loss, lr, grad_norm (and
// val_loss where validated) identical as text to the reference's.
void expect_same_metrics(const std::string& reference_run, const std::string& run, int steps);
// The final checkpoints (step `steps`) of both runs hold identical weights, AdamW moments and run
// state (step, RNG, loader position).
void expect_same_final_state(const std::string& reference_run, const std::string& run, int steps);
// The two checkpoint files hold the same weights, AdamW moments and run state.
void expect_same_checkpoint(const std::string& reference_ckpt, const std::string& ckpt);

// Step of the newest complete checkpoint in run/checkpoints, or -1.
int64_t newest_checkpoint_step(const std::string& run);

}  // namespace tt::test
