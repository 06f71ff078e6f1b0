// Ground truth for the cost model, reduced to a fast check (label mpi; launch/ground_truth.sh is the
// full run, docs/ground_truth.md its results): two "hosts" (network namespaces joined by a veth pair,
// netns_setup.sh) with a 1 Gbit/s `tc tbf` limit on both ends, one rank per host under mpirun.
//  1. Calibrated from `topotrain probe --dump` across the link, the cost model's all_reduce time for
//     16 MiB (`topotrain plan --predict-collective`) is within 35% of `topotrain bench comm`'s.
//  2. For a comm-bound config (3.2M params, 12.7 MB of fp32 gradients, ~50 ms of compute per step)
//     int8 gradient compression cuts the measured exposed communication by > 30% and the step by > 5%
//     (8-20% seen: the CPU codec takes back much of the saved transfer), and the
//     planner, fed the measured compute time, predicts the same (int8 faster than fp32, and its pick
//     is compressed).
//  3. ZeRO-2 with 1 MB buckets (each a reduce to its owners: the per-owner pricing of overlap.h) and
//     ZeRO-3 (every parameter group cut across both ranks: balanced gathers and reduce-scatters):
//     the predicted step is within 25% (ZeRO-2) and 30% (ZeRO-3) of the measured one. ZeRO-3 is
//     predicted 20-24% fast here: it synchronises the ranks at every group's gather, and ranks
//     sharing two cores drift apart by 10-20 ms per backward (docs/ground_truth.md, run 7), which
//     the model of lockstep ranks does not see (seen: -20..-24% over 5 runs; the balanced pricing of
//     the contiguous shards it used to have was 46% fast). That its collectives are priced balanced,
//     not per owner (+23% here), Planner.Zero3GathersAndReducesEachGroupAcrossAllRanks checks on data.
// Skips (with the reason) without root / network namespaces, or where the kernel has no sch_tbf.
//
// Design: as netns_test.cpp, nothing is added to the root namespace; the namespaces are named
// ttgt<pid>a/b, removed by an RAII guard, and stale ones of dead test processes are swept at start.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/parallel/ddp/netns_hosts.h"
#include "tests/test_util.h"

namespace tt::test {
namespace {

// Why the shaped link cannot be built here, or "".
std::string unavailable_reason() {
  if (geteuid() != 0) return "needs root (ip netns add, tc)";
  const std::string ns = "ttgt" + std::to_string(getpid()) + "probe";
  auto r = run_command("ip netns add " + ns);
  if (r.exit_code != 0) return "'ip netns add' failed (no CAP_NET_ADMIN or no iproute2?): " + r.output;
  std::string why;
  r = run_command("ip -n " + ns + " link add gtx type veth peer name gty");
  if (r.exit_code != 0) why = "cannot create a veth pair: " + r.output;
  if (why.empty()) {
    r = run_command("ip netns exec " + ns + " tc qdisc add dev gtx root tbf rate 1gbit burst 125kb latency 20ms");
    if (r.exit_code != 0) why = "tc tbf is not available (sch_tbf missing from the kernel, or no tc): " + r.output;
  }
  run_command("ip netns del " + ns);
  return why;
}

double median_after(const std::string& metrics_path, const std::string& key, int skip) {
  std::ifstream f(metrics_path);
  std::string line;
  std::vector<double> v;
  int n = 0;
  while (std::getline(f, line))
    if (n++ >= skip) v.push_back(nlohmann::json::parse(line).at(key).get<double>());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class GroundTruth : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    sweep_stale_namespaces("ttgt");
    const auto r =
        run_topotrain("data synth --out " + dir_.file("data") +
                      " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 100000 --val-tokens 20000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // 4 x 256 GPT (3.2M params), 32 tokens per rank and step: comm-bound at 1 Gbit/s.
  std::string model_sets() const {
    return " --set model.n_layer=4 --set model.n_embd=256 --set model.n_head=4 --set model.vocab_size=16"
           " --set train.batch_size=1 --set train.seq_len=32 --set train.threads=1";
  }
  std::string train_args(const std::string& run_dir, const std::string& compression, int zero_stage = 0,
                         int bucket_mb = 25) const {
    return std::string(TT_BINARY) + " train --config " + source_dir() + "/examples/gpt2-tiny-synth.pbtxt" +
           model_sets() + " --set data.train=" + dir_.file("data/train.bin") +
           " --set data.val=" + dir_.file("data/val.bin") + " --set logging.run_dir=" + run_dir +
           " --set train.steps=10 --set train.val_every=0 --set train.log_every=1000 --set checkpoint.every=0"
           " --set optimizer.warmup_steps=2 --set parallel.timeout_s=30 --set parallel.bucket_cap_mb=" +
           std::to_string(bucket_mb) + " --set parallel.zero_stage=" + std::to_string(zero_stage) +
           " --set parallel.grad_compression=" + compression;
  }
  // The planner's candidates for this model on `topo`, fed measured compute per step (optimizer_s 0:
  // the planner's own estimate).
  nlohmann::json plan(const std::string& topo, double forward_s, double backward_s, double optimizer_s = 0) const {
    const auto r = run_topotrain(
        "plan --config " + source_dir() + "/examples/gpt2-tiny-synth.pbtxt" + model_sets() + " --topology " + topo +
        " --backward-s " + std::to_string(backward_s) + " --forward-s " + std::to_string(forward_s) +
        (optimizer_s > 0 ? " --optimizer-s " + std::to_string(optimizer_s) : std::string()) + " --json --top 0");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.exit_code == 0 ? nlohmann::json::parse(r.output) : nlohmann::json::object();
  }
  // The predicted step of the fp32 ring candidate with these buckets (ZeRO-3 has none: its bucket_mb
  // is null) and ZeRO stage (NaN if absent).
  static double predicted_step(const nlohmann::json& plan, int bucket_mb, int zero_stage) {
    for (const auto& c : plan.value("candidates", nlohmann::json::array()))
      if ((zero_stage == 3 || c.at("bucket_mb").get<double>() == bucket_mb) &&
          c.at("zero_stage").get<int>() == zero_stage && c.at("shape") == "ring" && c.at("payload") == "fp32")
        return c.at("step_s").get<double>();
    return NAN;
  }
  // Brings the two hosts up with a 1 Gbit/s link and writes the probe's calibrated Topology to topo
  // (the sizes and iterations of launch/ground_truth.sh).
  void calibrate_over_1gbit(TwoHostNetwork& net, const std::string& topo) {
    const auto up = net.up();
    ASSERT_EQ(up.exit_code, 0) << "netns_setup.sh up failed:\n" << up.output;
    const auto shaped = net.shape("1gbit", "125000");
    ASSERT_EQ(shaped.exit_code, 0) << shaped.output;
    const auto r = run_command(
        net.mpirun(std::string(TT_BINARY) + " probe --no-gpu --dump " + topo + " --sizes 4K,16M --iters 6"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  TempDir dir_;
};

TEST_F(GroundTruth, OneGbitAllReduceAndCompressionMatchTheCalibratedModel) {
  TwoHostNetwork net("ttgt", 232);
  // 1. Calibrate, measure, predict.
  const std::string topo = dir_.file("topology.pbtxt");
  calibrate_over_1gbit(net, topo);
  if (HasFatalFailure()) return;
  auto r =
      run_command(net.mpirun(std::string(TT_BINARY) + " bench comm --ops all_reduce --sizes 16M --iters 3 --warmup 1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("all_reduce\\s+16\\.0 MiB\\s+\\d+\\s+([0-9.]+)"))) << r.output;
  const double measured_s = std::stod(m[1]) * 1e-6;
  const auto pred = run_topotrain("plan --topology " + topo + " --predict-collective all_reduce --bytes 16M --json");
  ASSERT_EQ(pred.exit_code, 0) << pred.output;
  const double predicted_s = nlohmann::json::parse(pred.output).at("predictions").at(0).at("time_s").get<double>();
  // 16 MiB at 1 Gbit/s cannot take less than 134 ms: the shaping is really there.
  EXPECT_GT(measured_s, 0.12) << "16 MiB all_reduce in " << measured_s << " s: is the link shaped?";
  EXPECT_LE(std::fabs(predicted_s - measured_s), 0.35 * measured_s)
      << "16 MiB all_reduce at 1 Gbit/s: model " << predicted_s << " s, measured " << measured_s << " s\n"
      << read_file(topo);

  // 2. fp32 vs int8 training steps.
  r = run_command(net.mpirun(train_args(dir_.file("fp32"), "none")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(net.mpirun(train_args(dir_.file("int8"), "int8")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double fp32_step = median_after(dir_.file("fp32/metrics.jsonl"), "step_s", 3);
  const double int8_step = median_after(dir_.file("int8/metrics.jsonl"), "step_s", 3);
  const double fp32_exposed = median_after(dir_.file("fp32/metrics.jsonl"), "exposed_comm_s", 3);
  const double int8_exposed = median_after(dir_.file("int8/metrics.jsonl"), "exposed_comm_s", 3);
  // The step gains less than the exposed comm: the CPU int8 codec and an all-gather that runs at
  // half the ring's speed under OpenMPI at 2 ranks (docs/ground_truth.md) take back part of it.
  EXPECT_LT(int8_step, 0.95 * fp32_step) << "int8 step " << int8_step << " s vs fp32 " << fp32_step << " s";
  EXPECT_LT(int8_exposed, 0.7 * fp32_exposed) << "exposed comm: int8 " << int8_exposed << " s vs fp32 " << fp32_exposed;

  // The planner, with the compute time this run measured (step less exposed comm; backward 2/3 of it).
  const double compute_s = std::max(1e-3, fp32_step - fp32_exposed);
  const auto j = plan(topo, compute_s / 3, 2 * compute_s / 3);
  double pred_fp32 = predicted_step(j, 25, 0), pred_int8 = NAN;
  for (const auto& c : j.value("candidates", nlohmann::json::array()))
    if (c.at("zero_stage").get<int>() == 0 && c.at("bucket_mb").get<double>() == 25 && c.at("shape") == "ring" &&
        c.at("payload") == "int8+ef")
      pred_int8 = c.at("step_s").get<double>();
  EXPECT_LT(pred_int8, pred_fp32) << j.dump(1);
  EXPECT_NE(j.at("pick").at("payload").get<std::string>(), "fp32") << "planner pick: " << j.at("pick").dump();
  std::printf(
      "16 MiB all_reduce: model %.1f ms, measured %.1f ms; step fp32 %.1f ms, int8 %.1f ms (predicted %.1f, %.1f); "
      "exposed fp32 %.1f ms, int8 %.1f ms\n",
      predicted_s * 1e3, measured_s * 1e3, fp32_step * 1e3, int8_step * 1e3, pred_fp32 * 1e3, pred_int8 * 1e3,
      fp32_exposed * 1e3, int8_exposed * 1e3);
}

TEST_F(GroundTruth, OneGbitZeroStepsMatchTheCalibratedModel) {
  TwoHostNetwork net("ttgt", 233);
  const std::string topo = dir_.file("topology.pbtxt");
  calibrate_over_1gbit(net, topo);
  if (HasFatalFailure()) return;
  // Compute time from a ZeRO-0 run (its forward, backward and optimizer seconds), then the two ZeRO runs.
  // The three runs share two cores with everything else on the machine: a round whose steps a
  // neighbour slowed (seen here: +40% on one run, not on the next) is measured once more, and the
  // model must hold on one of the two rounds.
  struct Run {
    const char* name;
    int zero_stage, bucket_mb;
  };
  const Run runs[] = {{"zero0", 0, 25}, {"zero2_1mb", 2, 1}, {"zero3_1mb", 3, 1}};
  std::string misses;
  for (int round = 0; round < 2; ++round) {
    const std::string at = dir_.file("round" + std::to_string(round)) + "/";
    for (const Run& run : runs) {
      const test::CommandResult r =
          run_command(net.mpirun(train_args(at + run.name, "none", run.zero_stage, run.bucket_mb)));
      ASSERT_EQ(r.exit_code, 0) << run.name << ":\n" << r.output;
    }
    auto measured = [&](const char* name, const char* key) {
      return median_after(at + name + "/metrics.jsonl", key, 3);
    };
    const auto j =
        plan(topo, measured("zero0", "forward_s"), measured("zero0", "backward_s"), measured("zero0", "optimizer_s"));
    misses.clear();
    for (const Run& run : runs) {
      if (run.zero_stage == 0) continue;
      const double predicted = predicted_step(j, run.bucket_mb, run.zero_stage), step = measured(run.name, "step_s");
      std::printf("round %d, %s: step predicted %.1f ms, measured %.1f ms\n", round, run.name, predicted * 1e3,
                  step * 1e3);
      if (!(std::fabs(predicted - step) <= (run.zero_stage == 3 ? 0.30 : 0.25) * step))
        misses += str(run.name, ": predicted step ", predicted, " s, measured ", step, " s\n");
    }
    if (misses.empty()) break;
  }
  EXPECT_TRUE(misses.empty()) << "in both rounds; the last:\n" << misses;
}

}  // namespace
}  // namespace tt::test
