// Implementation of the fault campaigns' shared run, reference and end-state checks.
#include "tests/faults/fault_run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "core/checkpoint_io.h"
#include "core/metrics.h"

namespace tt::test {

namespace fs = std::filesystem;

void FaultRunTest::SetUp() {
  auto r = run_topotrain("data synth --out " + dir_.file("data") +
                         " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 100000 --val-tokens 20000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

std::string FaultRunTest::train_command(const std::string& run_dir, const FaultRunSpec& spec, bool resume) const {
  std::ostringstream timeout;
  timeout << spec.timeout_s;
  // log_every=1: the campaigns trigger on the progress line of each step. sample_at_end=false: the
  // runs end with the last checkpoint, not with generating text.
  return std::string(TT_MPIRUN) + " -np 2 " + TT_BINARY + " train --config " + source_dir() +
         "/examples/gpt2-tiny-synth.pbtxt --set data.train=" + dir_.file("data/train.bin") +
         " --set data.val=" + dir_.file("data/val.bin") + " --set logging.run_dir=" + run_dir +
         " --set model.vocab_size=16 --set train.batch_size=8 --set train.threads=1 --set train.log_every=1" +
         " --set train.val_batches=2 --set train.sample_at_end=false --set optimizer.warmup_steps=5" +
         " --set train.steps=" + std::to_string(spec.steps) +
         " --set train.val_every=" + std::to_string(spec.val_every) +
         " --set checkpoint.every=" + std::to_string(spec.checkpoint_every) +
         " --set checkpoint.keep=" + std::to_string(spec.checkpoint_keep) +
         " --set parallel.zero_stage=" + std::to_string(spec.zero_stage) +
         " --set parallel.timeout_s=" + timeout.str() + (resume ? " --resume" : "");
}

std::string FaultRunTest::run_reference(const FaultRunSpec& spec) {
  const std::string run = dir_.file("reference");
  FaultRunSpec ref = spec;
  ref.checkpoint_keep = 0;  // keep every checkpoint: tests may compare any of them
  auto r = run_command("timeout -s KILL 180 " + train_command(run, ref, false));
  EXPECT_EQ(r.exit_code, 0) << "the uninterrupted reference run failed:\n" << r.output;
  return run;
}

void expect_same_metrics(const std::string& reference_run, const std::string& run, int steps) {
  const std::string ref_path = reference_run + "/metrics.jsonl", path = run + "/metrics.jsonl";
  // One record per step, in order: a resume that failed to truncate would leave a step twice.
  std::ifstream f(path);
  std::string line;
  std::vector<int64_t> order;
  while (std::getline(f, line)) {
    const auto step = json_line_step(line);
    EXPECT_TRUE(step.has_value()) << "a record without a step in " << path << ": " << line;
    if (step) order.push_back(*step);
  }
  std::vector<int64_t> expected(static_cast<size_t>(steps));
  for (int i = 0; i < steps; ++i) expected[size_t(i)] = i + 1;
  EXPECT_EQ(order, expected) << "the steps recorded in " << path;

  for (const char* field : {"loss", "lr", "grad_norm", "val_loss"}) {
    const auto want = metric_by_step(ref_path, field), got = metric_by_step(path, field);
    if (std::string(field) != "val_loss") EXPECT_EQ(want.size(), size_t(steps)) << field << " in " << ref_path;
    EXPECT_FALSE(want.empty()) << field << " in " << ref_path;
    for (const auto& [step, value] : want) {
      const auto it = got.find(step);
      if (it == got.end()) {
        ADD_FAILURE() << field << " of step " << step << " is missing from " << path;
        continue;
      }
      EXPECT_EQ(it->second, value) << field << " of step " << step;
    }
    EXPECT_EQ(got.size(), want.size()) << field << " records in " << path;
  }
}

void expect_same_final_state(const std::string& reference_run, const std::string& run, int steps) {
  expect_same_checkpoint(checkpoint_path(reference_run + "/checkpoints", steps),
                         checkpoint_path(run + "/checkpoints", steps));
}

void expect_same_checkpoint(const std::string& reference_ckpt, const std::string& ckpt) {
  const CheckpointReader want(reference_ckpt);
  const CheckpointReader got(ckpt);
  // The config section names the run directory, which differs; everything trained must not.
  for (const char* section : {"params", "adam_m", "adam_v", "state", "model_signature"}) {
    ASSERT_TRUE(want.has(section) && got.has(section)) << section;
    const std::string& a = want.bytes(section);
    const std::string& b = got.bytes(section);
    ASSERT_EQ(a.size(), b.size()) << section;
    size_t differ = 0, first = a.size();
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) {
        ++differ;
        first = std::min(first, i);
      }
    EXPECT_EQ(differ, 0u) << "section '" << section << "' of " << ckpt << " differs from the reference in " << differ
                          << " of " << a.size() << " bytes, first at byte " << first;
  }
}

int64_t newest_checkpoint_step(const std::string& run) {
  const std::string dir = run + "/checkpoints";
  const std::string newest = newest_complete_checkpoint(dir);
  if (newest.empty()) return -1;
  for (const auto& [step, path] : list_checkpoints(dir))
    if (path == newest) return step;
  return -1;
}

}  // namespace tt::test
