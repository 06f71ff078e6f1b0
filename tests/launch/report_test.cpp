// `topotrain report RUN_DIR` through the real binary: the page of a real run has every section, its
// charts are SVG images inside the page (nothing fetched from elsewhere), the planner's prediction
// and a trace's per-rank phases appear when the run directory holds them, damaged inputs are data
// errors naming the file, and the page renders in headless Chromium (Debian's `chromium`) with
// every picture decoded.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "core/fs.h"
#include "launch/report/report_page.h"
#include "tests/launch/tiny_corpus.h"
#include "tests/test_util.h"

namespace tt {
namespace {

using test::config_path;
using test::make_corpus;
using test::run_command;
using test::run_topotrain;
using test::TempDir;

using test::has;

int count(const std::string& s, const std::string& part) {
  int n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (run_command(std::string("command -v ") + name + " >/dev/null 2>&1").exit_code == 0) return name;
  return "";
}

// A two-rank trace as train.trace_steps writes it (times in microseconds): per rank and step, a step
// span holding data wait, forward (holding two blocks), backward and optimizer on the main lane, and a
// collective on its own lane (1000) while backward runs. Rank 1's forward is 100 ms longer.
std::string two_rank_trace() {
  std::string events;
  auto span = [&](int rank, int lane, const std::string& cat, const std::string& name, double ts, double dur) {
    events += "{\"ph\":\"X\",\"cat\":\"" + cat + "\",\"name\":\"" + name + "\",\"pid\":" + std::to_string(rank) +
              ",\"tid\":" + std::to_string(lane) + ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
              "},";
  };
  for (int rank = 0; rank < 2; ++rank)
    for (int step = 0; step < 2; ++step) {
      const double t0 = 1e6 * step, fwd = 200000 + 100000 * rank;
      span(rank, 1, "step", "step " + std::to_string(5 + step), t0, 900000);
      span(rank, 1, "data", "data wait", t0, 10000);
      span(rank, 1, "forward", "forward", t0 + 10000, fwd);
      span(rank, 1, "forward", "forward block 0", t0 + 10000, fwd / 2);
      span(rank, 1, "forward", "forward block 1", t0 + 10000 + fwd / 2, fwd / 2);
      span(rank, 1, "backward", "backward", t0 + 400000, 400000);
      span(rank, 1000, "comm", "bucket 0 all_reduce", t0 + 500000, 350000);
      span(rank, 1, "optimizer", "optimizer", t0 + 800000, 50000);
    }
  events += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"rank 0\"}}";
  return "{\"traceEvents\":[" + events + "]}";
}

TEST(Report, PageOfARealRunHasEverySectionAndSelfContainedCharts) {
  TempDir dir;
  const std::string sets = make_corpus(dir) + " --set train.steps=12 --set train.val_every=4";
  const auto trained = run_topotrain("train --config " + config_path("llama") + sets);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string run = dir.file("run");

  auto r = run_topotrain("report " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, run + "/report.html")) << r.output;
  const std::string page = test::read_file(run + "/report.html");
  for (const std::string& id : report_section_ids())
    EXPECT_TRUE(has(page, "<section id=\"" + id + "\">")) << "section " << id << " missing";
  // loss, throughput, memory and phases from metrics.jsonl, and the prediction (every run writes
  // prediction.json); no trace.
  EXPECT_EQ(count(page, "<img "), 5);
  EXPECT_EQ(count(page, "src=\"data:image/svg+xml;base64,"), 5);
  EXPECT_TRUE(has(page, "<th>predicted</th>")) << "the planner's prediction of this run";
  EXPECT_TRUE(has(page, "entropy floor of the data")) << "the synthetic corpus' floor belongs in the summary";
  EXPECT_TRUE(has(page, "Not available: no trace: set train.trace_steps"));
  EXPECT_TRUE(has(page, "steps logged</th><td class=\"num\">12 (last step 12)"));
  // The config, escaped, and nothing the page would fetch from elsewhere.
  EXPECT_TRUE(has(page, "logging {")) << "config.pbtxt belongs in the page";
  EXPECT_FALSE(std::regex_search(page, std::regex(R"((src|href)="(https?:)?//)"))) << "the page must be self-contained";

  // A given prediction and a two-rank trace.
  test::write_file(run + "/prediction.json", R"({"step_s": 0.05, "comm_s": 0.0, "exposed_comm_s": 0.0})");
  std::filesystem::create_directories(run + "/trace");
  test::write_file(run + "/trace/steps_5-6.json", two_rank_trace());
  test::write_file(run + "/trace/steps_5-6.predicted.json", "{\"traceEvents\":[]}");
  r = run_topotrain("report " + run + " --out " + dir.file("full.html"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string full = test::read_file(dir.file("full.html"));
  EXPECT_EQ(count(full, "<img "), 6);
  EXPECT_TRUE(has(full, "<th>predicted</th>"));
  EXPECT_TRUE(has(full, "50.0 ms")) << "the predicted step time";
  EXPECT_TRUE(has(full, "steps_5-6.json")) << "the trace the ranks come from";
  // Per rank and step: the four phases (blocks and the collective's lane are not phases); rank 1's
  // forward is 300 ms. Columns in name order: backward, data wait, forward, optimizer.
  EXPECT_TRUE(has(full, "<tr><th>rank</th><th>backward</th><th>data wait</th><th>forward</th><th>optimizer</th></tr>"))
      << full.substr(full.find("<section id=\"ranks\">"), 600);
  EXPECT_TRUE(has(full,
                  "<tr><th>1</th><td class=\"num\">400.0 ms</td><td class=\"num\">10.0 ms</td><td "
                  "class=\"num\">300.0 ms</td><td class=\"num\">50.0 ms</td></tr>"))
      << full.substr(full.find("<section id=\"ranks\">"), 600);

  // Headless Chromium: every section is in the rendered DOM and every picture decoded.
  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium): the page was not rendered";
  const auto dom = run_command(browser +
                               " --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 "
                               "--dump-dom file://" +
                               dir.file("full.html") + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.output;
  EXPECT_TRUE(has(dom.output, "data-images-loaded=\"6/6\"")) << dom.output.substr(0, 2000);
  for (const std::string& id : report_section_ids()) EXPECT_TRUE(has(dom.output, "id=\"" + id + "\"")) << id;
}

TEST(Report, ATracedRunShowsThePhasesOfItsSteps) {
  TempDir dir;
  const std::string sets = make_corpus(dir) + " --set train.steps=6 --set train.trace_steps=3-4";
  const auto trained = run_topotrain("train --config " + config_path() + sets);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const auto r = run_topotrain("report " + dir.file("run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string page = test::read_file(dir.file("run/report.html"));
  EXPECT_EQ(count(page, "<img "), 6) << "the five charts of the metrics and prediction, and the ranks";
  EXPECT_TRUE(has(page, "steps_3-4.json"));
  const std::string ranks = page.substr(page.find("<section id=\"ranks\">"));
  for (const char* phase : {"<th>forward</th>", "<th>backward</th>", "<th>optimizer</th>", "<th>data wait</th>"})
    EXPECT_TRUE(has(ranks, phase)) << phase << " in " << ranks.substr(0, 800);
  EXPECT_FALSE(has(ranks, "block")) << "the blocks are inside forward and backward, not phases of the step";
  EXPECT_TRUE(has(ranks, "<tr><th>0</th>")) << ranks.substr(0, 800);
  EXPECT_TRUE(has(ranks, "averaged over the 2 traced steps")) << ranks.substr(0, 1500);
}

TEST(Report, MissingOrDamagedInputsAreDataErrorsNamingTheFile) {
  TempDir dir;
  auto r = run_topotrain("report " + dir.file("nope"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  std::filesystem::create_directories(dir.file("empty"));
  r = run_topotrain("report " + dir.file("empty"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, dir.file("empty/metrics.jsonl"))) << r.output;

  std::filesystem::create_directories(dir.file("run"));
  test::write_file(dir.file("run/metrics.jsonl"), "{\"step\":1,\"loss\":2.5,\"step_s\":0.1,\"tokens_per_s\":1000}\n");
  test::write_file(dir.file("run/prediction.json"), "{\"step_s\": 0.1");
  r = run_topotrain("report " + dir.file("run"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, dir.file("run/prediction.json"))) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("run/report.html"))) << "no page from damaged inputs";

  test::write_file(dir.file("run/prediction.json"), "{\"step_s\": 0.1}");
  std::filesystem::create_directories(dir.file("run/trace"));
  test::write_file(dir.file("run/trace/steps_1-1.json"), "{\"traceEvents\": 5}");
  r = run_topotrain("report " + dir.file("run"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "steps_1-1.json")) << r.output;

  test::write_file(dir.file("run/metrics.jsonl"), "{\"step\":1,\"loss\":2.5}\n{\"loss\":");
  r = run_topotrain("report " + dir.file("run"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "metrics.jsonl:2")) << r.output;
}

}  // namespace
}  // namespace tt
