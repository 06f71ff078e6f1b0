// The span recorder (off records nothing, scoped spans nest, arguments are JSON), the Chrome
// trace-event writer (the document parses, names processes and lanes, moves spans by clock
// offsets), the exchange form's round trip, and step ranges.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/config.h"
#include "core/error.h"
#include "core/step_range.h"
#include "core/trace_events.h"
#include "core/trace_recorder.h"

namespace tt {
namespace {

using nlohmann::json;

TEST(TraceRecorder, RecordsNothingWhenOff) {
  trace::stop();
  (void)trace::take();
  {
    trace::ScopedSpan a("off", "test");
    trace::ScopedSpan b("block", 3, "test");
    EXPECT_FALSE(a.active());
    trace::record(trace::Span{"x", "test", 0, 1, 0, ""});
  }
  EXPECT_TRUE(trace::take().empty());
}

// On, every span is kept, in order (the cost of tracing is measured by `bench step --trace`, not
// asserted here).
TEST(TraceRecorder, RecordsEverySpanWhenOn) {
  constexpr int kSpans = 20000;
  trace::start();
  for (int i = 0; i < kSpans; ++i) trace::ScopedSpan span("forward block", i % 12, "forward");
  trace::stop();
  const std::vector<trace::Span> spans = trace::take();
  ASSERT_EQ(spans.size(), size_t(kSpans));
  for (size_t i = 1; i < spans.size(); ++i) ASSERT_LE(spans[i - 1].start_ns, spans[i].start_ns) << i;
  EXPECT_TRUE(trace::take().empty()) << "take() hands the spans over";
}

TEST(TraceRecorder, ScopedSpansNestOnTheirThreadsLane) {
  trace::start();
  {
    trace::ScopedSpan outer("step", 7, "step");
    trace::ScopedSpan inner("forward", "forward");
    inner.set_args(trace::Args().add("bytes", int64_t(1024)).add("algorithm", "all_reduce").add("x", 0.5).str());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::thread([] {
    trace::name_this_thread("helper");
    trace::ScopedSpan other("other thread", "test");
  }).join();
  trace::stop();
  const std::vector<trace::Span> spans = trace::take();
  ASSERT_EQ(spans.size(), 3u);
  const trace::Span& inner = spans[0];  // ends first
  const trace::Span& outer = spans[1];
  EXPECT_EQ(outer.name, "step 7");
  EXPECT_EQ(inner.name, "forward");
  EXPECT_EQ(inner.lane, outer.lane);
  EXPECT_NE(spans[2].lane, outer.lane);
  EXPECT_GE(inner.start_ns, outer.start_ns);
  EXPECT_LE(inner.start_ns + inner.duration_ns, outer.start_ns + outer.duration_ns);
  EXPECT_GE(inner.duration_ns, 1000000);
  const json args = json::parse(inner.args);
  EXPECT_EQ(args["bytes"], 1024);
  EXPECT_EQ(args["algorithm"], "all_reduce");
  EXPECT_DOUBLE_EQ(args["x"].get<double>(), 0.5);
  bool named = false;
  for (const auto& [lane, name] : trace::lane_names()) named |= lane == spans[2].lane && name == "helper";
  EXPECT_TRUE(named);
}

TEST(TraceRecorder, ArgsEscapeAndNullNonFinite) {
  const json j = json::parse(trace::Args().add("name", "a\"b\n").add("nan", 0.0 / 0.0).str());
  EXPECT_EQ(j["name"], "a\"b\n");
  EXPECT_TRUE(j["nan"].is_null());
  EXPECT_EQ(trace::Args().str(), "");
}

trace::TraceProcess sample_process(int pid, int64_t offset_ns) {
  trace::TraceProcess p;
  p.pid = pid;
  p.name = "rank " + std::to_string(pid);
  p.lanes = {{1, "main"}, {trace::kCollectiveLane, "collectives"}};
  p.spans = {{"step 1", "step", 1000000 + offset_ns, 500000, 1, ""},
             {"forward", "forward", 1100000 + offset_ns, 100000, 1, "{\"k\":\"q\\\"uote\"}"},
             {"bucket 0 all_reduce", "comm", 1200000 + offset_ns, 50000, trace::kCollectiveLane,
              trace::Args().add("seq", 1).add("bytes", int64_t(4096)).str()}};
  p.clock_offset_ns = offset_ns;
  return p;
}

TEST(TraceEvents, WritesChromeTraceThatParses) {
  const std::string text =
      trace::chrome_trace_json({sample_process(0, 0), sample_process(1, 250000)}, "{\"steps\":\"1-1\"}");
  const json doc = json::parse(text);
  ASSERT_TRUE(doc["traceEvents"].is_array());
  EXPECT_EQ(doc["otherData"]["steps"], "1-1");
  int complete = 0;
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, double> step_ts;
  for (const json& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name")) << e.dump();
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    ++complete;
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_GT(e["dur"].get<double>(), 0.0);
    if (e["name"] == "step 1") step_ts[e["pid"]] = e["ts"];
    if (e["name"] == "forward") {
      EXPECT_EQ(e["args"]["k"], "q\"uote");
    }
    if (e["name"] == "bucket 0 all_reduce") {
      EXPECT_EQ(e["args"]["bytes"], 4096);
    }
  }
  EXPECT_EQ(complete, 6);
  EXPECT_EQ(process_names[0], "rank 0");
  EXPECT_EQ(process_names[1], "rank 1");
  EXPECT_EQ((thread_names[{1, trace::kCollectiveLane}]), "collectives");
  // Rank 1's clock runs 250 us ahead: its spans land at the same place as rank 0's.
  EXPECT_DOUBLE_EQ(step_ts[0], 0.0);
  EXPECT_DOUBLE_EQ(step_ts[1], 0.0);
}

TEST(TraceEvents, SpreadsOverlappingSpansOverSubLanes) {
  trace::TraceProcess p;
  p.lanes = {{trace::kCollectiveLane, "collectives"}};
  p.spans = {{"a", "comm", 0, 100, trace::kCollectiveLane, ""},
             {"b", "comm", 50, 100, trace::kCollectiveLane, ""},
             {"c", "comm", 120, 10, trace::kCollectiveLane, ""},
             {"d", "comm", 60, 10, trace::kCollectiveLane, ""}};
  trace::spread_overlapping(p, trace::kCollectiveLane);
  EXPECT_EQ(p.spans[0].lane, trace::kCollectiveLane);      // a: first
  EXPECT_EQ(p.spans[1].lane, trace::kCollectiveLane + 1);  // b overlaps a
  EXPECT_EQ(p.spans[2].lane, trace::kCollectiveLane);      // c after a ended
  EXPECT_EQ(p.spans[3].lane, trace::kCollectiveLane + 2);  // d overlaps a and b
  bool named = false;
  for (const auto& [lane, name] : p.lanes) named |= lane == trace::kCollectiveLane + 2 && name == "collectives 3";
  EXPECT_TRUE(named);
}

TEST(TraceEvents, ProcessRoundTripsThroughItsExchangeForm) {
  const trace::TraceProcess p = sample_process(3, 0);
  const trace::TraceProcess q = trace::process_from_json(trace::process_to_json(p));
  EXPECT_EQ(q.pid, 3);
  EXPECT_EQ(q.name, "rank 3");
  EXPECT_EQ(q.lanes, p.lanes);
  ASSERT_EQ(q.spans.size(), p.spans.size());
  for (size_t i = 0; i < p.spans.size(); ++i) {
    EXPECT_EQ(q.spans[i].name, p.spans[i].name);
    EXPECT_EQ(q.spans[i].start_ns, p.spans[i].start_ns);
    EXPECT_EQ(q.spans[i].duration_ns, p.spans[i].duration_ns);
    EXPECT_EQ(q.spans[i].lane, p.spans[i].lane);
    EXPECT_EQ(q.spans[i].args, p.spans[i].args);
  }
  EXPECT_THROW(trace::process_from_json("{not json"), Error);
}

TEST(StepRange, ParsesRangesAndSingleSteps) {
  StepRange r;
  std::string error;
  ASSERT_TRUE(parse_step_range("20-22", &r, &error));
  EXPECT_EQ(r.first, 20);
  EXPECT_EQ(r.last, 22);
  EXPECT_EQ(r.str(), "20-22");
  EXPECT_TRUE(r.contains(21));
  EXPECT_FALSE(r.contains(23));
  ASSERT_TRUE(parse_step_range("5", &r, &error));
  EXPECT_EQ(r.str(), "5-5");
  ASSERT_TRUE(parse_step_range("", &r, &error));
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(r.contains(1));
  for (const char* bad : {"0", "3-2", "a-b", "-3", "4-", "1-2-3", " 4", "99999999999"})
    EXPECT_FALSE(parse_step_range(bad, &r, &error)) << bad;
}

// train.trace_steps is validated with the config: a bad range is a config error naming the field.
TEST(StepRange, ConfigValidatesTraceSteps) {
  const std::string config =
      "model { n_layer: 2 n_head: 4 n_embd: 64 vocab_size: 32 max_seq_len: 64 }\n"
      "train { batch_size: 2 seq_len: 16 steps: 10 }\n"
      "data { train: \"t.bin\" }\n"
      "optimizer { lr: 0.001 }\n";
  EXPECT_EQ(parse_config_text(config, "test.pbtxt", {"train.trace_steps=3-4"}).train().trace_steps(), "3-4");
  EXPECT_EQ(parse_config_text(config, "test.pbtxt").train().trace_steps(), "");
  for (const char* bad : {"4-2", "x", "0", "11-12"}) {
    try {
      parse_config_text(config, "test.pbtxt", {std::string("train.trace_steps=") + bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig);
      EXPECT_NE(std::string(e.what()).find("train.trace_steps"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tt
