// train.trace_steps end to end through `mpirun -np 2 topotrain train`: the merged timeline of both
// ranks is one Chrome trace-event document; every gradient collective of rank 0 has its twin on
// rank 1 (same sequence number, bytes and name); forward, backward (and their blocks) and the
// optimizer nest inside their step; the measured clock offsets are below 1 ms on one host; and the
// planner's predicted timeline beside it names the same collectives.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/parallel/ddp/tiny_train.h"
#include "tests/test_util.h"

namespace tt {
namespace {

using nlohmann::json;

class TraceSteps : public test::TinyTrainTest {
 protected:
  test::CommandResult train(int ranks, const std::string& run_dir, const std::string& extra) {
    return test::run_command(std::string(TT_MPIRUN) + " -np " + std::to_string(ranks) + " " + TT_BINARY + " " +
                             test::tiny_train_args(dir_, run_dir, 0, extra));
  }
};

struct Event {
  std::string name, cat;
  int pid = 0, tid = 0;
  double ts = 0, dur = 0;
  json args;
  bool contains(const Event& o) const {
    return pid == o.pid && tid == o.tid && o.ts >= ts - 1e-3 && o.ts + o.dur <= ts + dur + 1e-3;
  }
};

std::vector<Event> complete_events(const json& doc) {
  std::vector<Event> events;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    events.push_back(Event{e.at("name"), e.value("cat", ""), e.at("pid"), e.at("tid"), e.at("ts"), e.at("dur"),
                           e.value("args", json::object())});
  }
  return events;
}

// The collectives of each rank, by sequence number.
std::map<int64_t, Event> collectives_of(const std::vector<Event>& events, int rank) {
  std::map<int64_t, Event> out;
  for (const Event& e : events)
    if (e.pid == rank && e.cat == "comm" && e.args.contains("seq")) out[e.args.at("seq").get<int64_t>()] = e;
  return out;
}

// The names of the bucket collectives of a predicted timeline.
std::set<std::string> predicted_bucket_names(const std::string& path) {
  std::set<std::string> names;
  for (const Event& e : complete_events(json::parse(test::read_file(path))))
    if (e.cat == "comm" && e.name.rfind("bucket ", 0) == 0) names.insert(e.name);
  return names;
}

TEST_F(TraceSteps, TwoRanksMergeIntoOneTimeline) {
  const std::string small_buckets = " --set parallel.bucket_cap_mb=0.05 --set parallel.first_bucket_cap_mb=0.01";
  auto r = train(2, "run", small_buckets + " --set train.steps=5 --set train.trace_steps=3-4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string path = dir_.file("run/trace/steps_3-4.json");
  ASSERT_TRUE(std::filesystem::exists(path)) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << "the log names the trace file\n" << r.output;
  const json doc = json::parse(test::read_file(path));

  // One process per rank, named.
  std::map<int, std::string> process_names;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_names[e.at("pid")] = e.at("args").at("name");
  EXPECT_EQ(process_names, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));

  const std::vector<Event> events = complete_events(doc);
  // Collectives: rank 0's and rank 1's, by sequence number.
  std::map<int64_t, Event> collectives[2];
  for (const Event& e : events)
    if (e.cat == "comm" && e.args.contains("seq")) collectives[e.pid][e.args.at("seq").get<int64_t>()] = e;
  ASSERT_GE(collectives[0].size(), 4u) << "several buckets per step, two steps";
  EXPECT_EQ(collectives[0].size(), collectives[1].size());
  for (const auto& [seq, c] : collectives[0]) {
    ASSERT_TRUE(collectives[1].count(seq)) << "rank 1 has no collective #" << seq;
    const Event& twin = collectives[1].at(seq);
    EXPECT_EQ(twin.name, c.name) << seq;
    EXPECT_EQ(twin.args.at("bytes"), c.args.at("bytes")) << seq;
    EXPECT_GT(c.args.at("bytes").get<int64_t>(), 0);
    EXPECT_EQ(c.args.at("algorithm"), "all_reduce");
  }

  // Forward, backward, their blocks and the optimizer nest inside a step of their rank and lane.
  std::vector<Event> steps;
  for (const Event& e : events)
    if (e.cat == "step") steps.push_back(e);
  EXPECT_EQ(steps.size(), 4u) << "steps 3 and 4 on two ranks";
  int nested = 0;
  std::set<std::string> kinds;
  for (const Event& e : events) {
    if (e.cat != "forward" && e.cat != "backward" && e.cat != "optimizer" && e.cat != "data") continue;
    bool inside = false;
    for (const Event& s : steps) inside |= s.contains(e);
    EXPECT_TRUE(inside) << e.name << " of rank " << e.pid << " at " << e.ts << " us is outside every step";
    nested += inside;
    kinds.insert(e.name);
  }
  EXPECT_GT(nested, 0);
  for (const char* name : {"forward", "backward", "optimizer", "data wait", "forward block 0", "backward block 1"})
    EXPECT_TRUE(kinds.count(name)) << name;

  // Clock offsets measured on one host: well below a millisecond.
  const json& other = doc.at("otherData");
  EXPECT_EQ(other.at("steps"), "3-4");
  ASSERT_EQ(other.at("clock_offsets_us").size(), 2u);
  for (const json& offset : other.at("clock_offsets_us")) EXPECT_LT(std::abs(offset.get<double>()), 1000.0);
  // One host: rank 1 reads rank 0's clock (the exchange itself is tested in test_mpi, ClockOffsets).
  EXPECT_EQ(other.at("clock_shared"), json::array({true, true}));

  // The predicted timeline of one step names the same collectives as a measured step.
  const std::string predicted_path = dir_.file("run/trace/steps_3-4.predicted.json");
  ASSERT_TRUE(std::filesystem::exists(predicted_path)) << r.output;
  const json predicted = json::parse(test::read_file(predicted_path));
  std::set<std::string> predicted_names, measured_names;
  for (const Event& e : complete_events(predicted))
    if (e.cat == "comm" && e.name.rfind("bucket ", 0) == 0) predicted_names.insert(e.name);
  for (const auto& [seq, c] : collectives[0]) measured_names.insert(c.name);
  EXPECT_FALSE(predicted_names.empty());
  EXPECT_EQ(predicted_names, measured_names);

  // The prediction of a step, written at start-up.
  const json prediction = json::parse(test::read_file(dir_.file("run/prediction.json")));
  EXPECT_GT(prediction.at("step_s").get<double>(), 0.0);
  EXPECT_GE(prediction.at("comm_s").get<double>(), prediction.at("exposed_comm_s").get<double>());
}

// The hierarchical all-reduce with a compressed payload (two one-rank "nodes": its four stages run
// over sub-communicators) is traced stage by stage with twins on both ranks, and its predicted
// timeline names the same stages; ZeRO-3's predicted timeline has its per-group gathers and the
// reduce-scatters the run traces.
TEST_F(TraceSteps, HierarchicalStagesAndZero3GathersAreTracedAndPredicted) {
  const std::string small_buckets = " --set parallel.bucket_cap_mb=0.05 --set parallel.first_bucket_cap_mb=0.01";
  auto r = train(2, "hier",
                 small_buckets +
                     " --set train.steps=3 --set train.trace_steps=2-3 --set parallel.collective=hierarchical"
                     " --set parallel.ranks_per_node=1 --set parallel.grad_compression=int8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Event> events = complete_events(json::parse(test::read_file(dir_.file("hier/trace/steps_2-3.json"))));
  const auto rank0 = collectives_of(events, 0), rank1 = collectives_of(events, 1);
  ASSERT_FALSE(rank0.empty());
  EXPECT_EQ(rank0.size(), rank1.size());
  std::set<std::string> algorithms, measured_names;
  for (const auto& [seq, c] : rank0) {
    ASSERT_TRUE(rank1.count(seq)) << "rank 1 has no collective #" << seq;
    EXPECT_EQ(rank1.at(seq).name, c.name) << seq;
    EXPECT_EQ(rank1.at(seq).args.at("bytes"), c.args.at("bytes")) << seq;
    EXPECT_EQ(c.args.at("payload"), "int8");
    algorithms.insert(c.args.at("algorithm").get<std::string>());
    measured_names.insert(c.name);
  }
  EXPECT_EQ(algorithms, (std::set<std::string>{"node all_to_all", "cross-node all_to_all", "cross-node all_gather",
                                               "node all_gather"}));
  EXPECT_EQ(predicted_bucket_names(dir_.file("hier/trace/steps_2-3.predicted.json")), measured_names);

  auto z = train(2, "zero3", " --set train.steps=2 --set optimizer.warmup_steps=1 --set train.trace_steps=2 --set parallel.zero_stage=3");
  ASSERT_EQ(z.exit_code, 0) << z.output;
  std::set<std::string> zero3_names;
  for (const auto& [seq, c] : collectives_of(
           complete_events(json::parse(test::read_file(dir_.file("zero3/trace/steps_2-2.json")))), 0))
    if (c.name.rfind("bucket ", 0) == 0) zero3_names.insert(c.name);
  ASSERT_FALSE(zero3_names.empty());
  EXPECT_EQ(predicted_bucket_names(dir_.file("zero3/trace/steps_2-2.predicted.json")), zero3_names);
  int gathers = 0, blocks = 0;
  for (const Event& e : complete_events(json::parse(test::read_file(dir_.file("zero3/trace/steps_2-2.predicted.json"))))) {
    gathers += e.name.rfind("gather group ", 0) == 0;
    blocks += e.name.rfind("backward block ", 0) == 0;
  }
  EXPECT_GE(gathers, 4) << "every group gathered for forward and again for backward";
  EXPECT_GT(blocks, 0);
}

// Without train.trace_steps no trace directory appears, and a bad range is a config error naming the field.
TEST_F(TraceSteps, OffWritesNoTraceAndBadRangeNamesTheField) {
  auto r = train(1, "off", "--set train.steps=4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("off/trace")));
  EXPECT_TRUE(std::filesystem::exists(dir_.file("off/prediction.json")));
  auto bad = train(1, "bad", "--set train.trace_steps=4-2");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("train.trace_steps"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace tt
