// The small synthetic corpus and quick-start configs the end-to-end CLI tests train on.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace tt::test {

// Writes a small synthetic corpus (16 characters, order 2) into dir/data; returns the --set flags
// that point the quick-start config at it (run directory dir/run), sized so a run takes seconds.
inline std::string make_corpus(const TempDir& dir, int64_t train_tokens = 1000000) {
  auto r = run_topotrain("data synth --out " + dir.file("data") + " --vocab 16 --order 2 --concentration 30 --seed 3 " +
                         "--train-tokens " + std::to_string(train_tokens) + " --val-tokens 100000");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return " --set data.train=" + dir.file("data/train.bin") + " --set data.val=" + dir.file("data/val.bin") +
         " --set logging.run_dir=" + dir.file("run") +
         " --set model.vocab_size=16 --set train.threads=1 --set train.device=cpu" +
         " --set train.log_every=50 --set checkpoint.every=0 --set optimizer.warmup_steps=2";
}

inline std::string config_path(const std::string& arch = "gpt2") {
  return source_dir() + "/examples/" + arch + "-tiny-synth.pbtxt";
}

}  // namespace tt::test
