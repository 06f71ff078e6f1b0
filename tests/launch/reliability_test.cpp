// Regression tests for defects that lost work or crashed without a word, each through the real
// `topotrain` binary: a run directory holds one run written by one job, divergence ends the run
// without checkpointing non-finite weights, a run that cannot fit in memory stops before it
// allocates (exit 5, not the OOM killer's SIGKILL), a shard that changes under a run is a data error
// naming it, token ids outside the vocabulary are found at start-up, and impossible sizes and
// arguments are usage or config errors.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "core/checkpoint_io.h"
#include "tests/launch/tiny_corpus.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using test::config_path;
using test::make_corpus;
using test::run_command;
using test::run_topotrain;
using test::TempDir;

using test::has;

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(RunDir, FreshRunIntoAnExistingRunRefusesAndOverwriteMovesTheOldRunAside) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set checkpoint.every=2";
  ASSERT_EQ(run_topotrain("train --config " + config_path() + sets + " --set train.steps=6").exit_code, 0);
  const std::string metrics = test::read_file(dir.file("run/metrics.jsonl"));
  const auto checkpoints = listing(dir.file("run/checkpoints"));
  ASSERT_EQ(checkpoints.size(), 2u);  // checkpoint.keep = 2: steps 4 and 6

  auto again = run_topotrain("train --config " + config_path() + sets + " --set train.steps=3");
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_TRUE(has(again.output, "already holds a run (checkpoints up to step 6")) << again.output;
  EXPECT_TRUE(has(again.output, "--resume")) << again.output;
  EXPECT_EQ(test::read_file(dir.file("run/metrics.jsonl")), metrics) << "the old run's metrics were touched";
  EXPECT_EQ(listing(dir.file("run/checkpoints")), checkpoints);

  auto both = run_topotrain("train --config " + config_path() + sets + " --resume --overwrite");
  EXPECT_EQ(both.exit_code, 2) << both.output;

  auto overwrite = run_topotrain("train --config " + config_path() + sets + " --set train.steps=3 --overwrite");
  ASSERT_EQ(overwrite.exit_code, 0) << overwrite.output;
  EXPECT_TRUE(has(overwrite.output, "moved the previous run")) << overwrite.output;
  EXPECT_EQ(test::read_file(dir.file("run.previous-1/metrics.jsonl")), metrics);
  EXPECT_EQ(listing(dir.file("run.previous-1/checkpoints")), checkpoints);
  EXPECT_EQ(listing(dir.file("run/checkpoints")),
            (std::vector<std::string>{"step_00000002.ckpt", "step_00000003.ckpt"}));
  EXPECT_EQ(test::metric_by_step(dir.file("run/metrics.jsonl")).size(), 3u);
  EXPECT_TRUE(fs::exists(dir.file("data/train.bin"))) << "--overwrite moves only the run's own files";
}

TEST(RunDir, SecondConcurrentRunRefusesNamingTheFirstAndADeadHolderBlocksNothing) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=100000";
  test::BackgroundJob first(std::string(TT_BINARY) + " train --config " + config_path() + sets, dir.file("first.log"));
  ASSERT_TRUE(first.wait_until([&] { return test::count_lines(dir.file("run/metrics.jsonl")) >= 1; }, 60))
      << first.output();

  auto second = run_topotrain("train --config " + config_path() + sets + " --resume");
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_TRUE(has(second.output, "is in use by another training (PID " + std::to_string(first.pid()) + " on host"))
      << second.output;

  first.kill_all();  // SIGKILL: the kernel drops its lock
  EXPECT_EQ(first.wait(30), 128 + SIGKILL);
  auto third = run_topotrain("train --config " + config_path() + sets + " --set train.steps=2 --overwrite");
  EXPECT_EQ(third.exit_code, 0) << third.output;
}

TEST(RunDir, EmptyRunDirIsAConfigErrorAndWritesNothing) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000);
  auto r = run_command("cd " + dir.path() + " && " + TT_BINARY + " train --config " + config_path() + sets +
                       " --set logging.run_dir= --set train.steps=2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "logging.run_dir is empty")) << r.output;
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"data"});
}

// Every value of the "params" section of a checkpoint is finite.
bool params_finite(const std::string& checkpoint) {
  CheckpointReader r(checkpoint);
  std::vector<float> params(r.section_bytes("params") / sizeof(float));
  r.copy_to("params", params.data(), params.size() * sizeof(float));
  for (float p : params)
    if (!std::isfinite(p)) return false;
  return !params.empty();
}

TEST(Divergence, StopsWithAnErrorNamingTheTensorAndKeepsOnlyFiniteCheckpoints) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set checkpoint.every=2 --set optimizer.grad_clip=0";
  ASSERT_EQ(run_topotrain("train --config " + config_path() + sets + " --set train.steps=4").exit_code, 0);
  // The same run continued with a learning rate that blows it up.
  auto r = run_topotrain("train --config " + config_path() + sets +
                         " --set train.steps=40 --set optimizer.lr=1e20 --resume");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m,
                                std::regex("training diverged: the gradient norm was not finite at 3 steps in a row "
                                           "\\(steps (\\d+)-(\\d+), no update made\\); the first non-finite tensor is "
                                           "(parameter|the gradient of) [a-z_.0-9]+")))
      << r.output;
  const int last = std::stoi(m[2]);
  EXPECT_LT(last, 40);
  const auto kept = list_checkpoints(dir.file("run/checkpoints"));
  ASSERT_FALSE(kept.empty());
  for (const auto& [step, path] : kept) {
    EXPECT_LT(step, last) << "a checkpoint was written after the divergence was known";
    EXPECT_TRUE(params_finite(path)) << path;
  }
}

TEST(Memory, ARunThatCannotFitStopsBeforeAllocatingWithExit5AndSaysWhatWouldFit) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000);
  // Parameters alone: about 8e13 of them, no lever helps.
  auto huge = run_topotrain("train --config " + config_path() + sets +
                            " --set model.n_layer=100000 --set model.n_embd=8192 --set model.n_head=64");
  EXPECT_EQ(huge.exit_code, 5) << huge.output;
  EXPECT_TRUE(has(huge.output, "more than the host's available memory")) << huge.output;
  EXPECT_TRUE(has(huge.output, "the biggest consumers are optimizer state")) << huge.output;
  EXPECT_TRUE(has(huge.output, "use a smaller model")) << huge.output;
  EXPECT_FALSE(fs::exists(dir.file("run/metrics.jsonl")));
  // Activations of a huge batch: smaller settings fit, and the error says which.
  auto batch = run_topotrain("train --config " + config_path() + sets +
                             " --set model.max_seq_len=4096 --set train.seq_len=4096 --set train.batch_size=65536");
  EXPECT_EQ(batch.exit_code, 5) << batch.output;
  EXPECT_TRUE(has(batch.output, "the biggest consumers are activations")) << batch.output;
  EXPECT_TRUE(std::regex_search(batch.output, std::regex("it would fit with --set train.recompute=full.* --set "
                                                         "train.batch_size=\\d+")))
      << batch.output;
}

TEST(Data, AShardTruncatedWhileTrainingIsADataErrorNamingIt) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 4000000) + " --set train.steps=100000";
  const std::string shard = dir.file("data/train.bin");
  test::BackgroundJob job(std::string(TT_BINARY) + " train --config " + config_path() + sets, dir.file("train.log"));
  ASSERT_TRUE(job.wait_until([&] { return test::count_lines(dir.file("run/metrics.jsonl")) >= 2; }, 60))
      << job.output();
  fs::resize_file(shard, 2048);
  const int code = job.wait(60);
  EXPECT_EQ(code, 3) << job.output();
  EXPECT_TRUE(has(job.output(), "data error: " + shard + ": the token shard changed on disk")) << job.output();
}

TEST(Data, TokenIdsOutsideTheVocabularyAreFoundAtStartNamingFileAndOffset) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000);  // ids 0..15
  auto r = run_topotrain("train --config " + config_path() + sets + " --set model.vocab_size=8");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(dir.file("data/train.bin") +
                                                     ": token \\d+ \\(byte offset \\d+\\) has id (8|9|1[0-5]), outside "
                                                     "the model's vocabulary \\[0, 8\\)")))
      << r.output;
  EXPECT_FALSE(fs::exists(dir.file("run/metrics.jsonl")));
}

TEST(Config, ModelSizesBeyondAnyModelAreConfigErrorsNamingTheField) {
  for (const std::string& set :
       {"model.n_embd=2147483646", "model.vocab_size=2147483647", "model.n_embd=1073741824", "model.head_dim=100000"}) {
    auto r = run_topotrain("train --config " + config_path() + " --set " + set);
    EXPECT_EQ(r.exit_code, 2) << set << "\n" << r.output;
    EXPECT_TRUE(has(r.output, set.substr(0, set.find('=')))) << r.output;
    EXPECT_TRUE(has(r.output, "largest supported")) << r.output;
  }
}

TEST(Config, ResumingWithAnotherBatchSizeSaysWhatChanged) {
  TempDir dir;
  const std::string sets = make_corpus(dir, 100000) + " --set train.steps=4 --set checkpoint.every=2";
  ASSERT_EQ(run_topotrain("train --config " + config_path() + sets + " --set train.steps=2").exit_code, 0);
  auto r = run_topotrain("train --config " + config_path() + sets + " --set train.batch_size=4 --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "differs from the checkpoint's")) << r.output;
  EXPECT_TRUE(has(r.output, "train.batch_size: 8 -> 4")) << r.output;
  EXPECT_TRUE(has(r.output, "train.steps: 2 -> 4")) << r.output;
  EXPECT_TRUE(has(r.output, "tokens per step: 512 -> 256")) << r.output;
  EXPECT_FALSE(has(r.output, "logging.")) << r.output;
}

TEST(Cli, SampleRejectsImpossibleSettingsBeforeReadingWeights) {
  for (const std::string& bad : {"--temperature nan", "--temperature -1", "--top-k -3", "--temperature inf"}) {
    auto r = run_topotrain("sample --checkpoint /nonexistent " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.output;
    EXPECT_TRUE(has(r.output, bad.substr(0, bad.find(' ')))) << r.output;
  }
}

TEST(Cli, CommSizesBeyondMemoryAreUsageErrors) {
  for (const std::string& cmd : {"bench comm --sizes 1000G", "probe --sizes 1000G"}) {
    auto r = run_topotrain(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
    EXPECT_TRUE(has(r.output, "1000G")) << r.output;
    EXPECT_FALSE(has(r.output, "bad_alloc")) << r.output;
  }
}

TEST(Cli, EmptyOrInconsistentTopologyFilesAreConfigErrors) {
  TempDir dir;
  test::write_file(dir.file("empty.pbtxt"), "");
  auto empty = run_topotrain("probe --topology " + dir.file("empty.pbtxt"));
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_TRUE(has(empty.output, "no nodes")) << empty.output;
  EXPECT_TRUE(has(empty.output, "`topotrain probe --dump FILE`")) << empty.output;
  test::write_file(dir.file("zero.pbtxt"),
                   "gpus_per_node: 0\nnodes { hostname: \"a\" gpus { name: \"x\" } gpus { name: \"y\" } }\n");
  auto zero = run_topotrain("plan --config " + test::source_dir() + "/examples/gpt2-124m.pbtxt" + " --topology " +
                            dir.file("zero.pbtxt"));
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_TRUE(has(zero.output, "gpus_per_node = 0 but node 0 lists 2 GPU(s)")) << zero.output;
}

TEST(Cli, PresetTyposGetADidYouMean) {
  auto topo = run_topotrain("probe --preset 8x4090");
  EXPECT_EQ(topo.exit_code, 2) << topo.output;
  EXPECT_TRUE(has(topo.output, "did you mean '8x4090-pcie'?")) << topo.output;
  auto model = run_topotrain("simulate --model gpt2-125m --preset 8x4090-pcie --gpus 1,2");
  EXPECT_EQ(model.exit_code, 2) << model.output;
  EXPECT_TRUE(has(model.output, "did you mean 'gpt2-124m'?")) << model.output;
}

}  // namespace
}  // namespace tt
