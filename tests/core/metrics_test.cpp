// JSON line formatting (escaping, round-trip numbers, null for non-finite) and MetricsSink's
// fresh/resume behaviour on metrics.jsonl.
#include "core/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "core/error.h"
#include "core/json_writer.h"
#include "tests/test_util.h"

namespace tt {
namespace {

TEST(JsonWriter, BuildsOneLineObjects) {
  JsonLine j;
  j.add("step", 3).add("loss", 1.234567f).add("name", "x").add("ok", true).add("tokens", int64_t(1) << 40);
  j.add("lr", 6e-4).add("u", size_t(7)).add_raw("nested", "{\"a\":[1,2]}");
  EXPECT_EQ(j.str(),
            "{\"step\":3,\"loss\":1.234567,\"name\":\"x\",\"ok\":true,\"tokens\":1099511627776,"
            "\"lr\":0.0006,\"u\":7,\"nested\":{\"a\":[1,2]}}");
  EXPECT_EQ(JsonLine().str(), "{}");
}

TEST(JsonWriter, EscapesStrings) {
  EXPECT_EQ(json_escape("plain"), "plain");
  EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(json_escape("\n\t\r\b\f"), "\\n\\t\\r\\b\\f");
  EXPECT_EQ(json_escape(std::string("\x01\x1f", 2)), "\\u0001\\u001f");
  EXPECT_EQ(json_escape(std::string("nul\0x", 5)), "nul\\u0000x");
  EXPECT_EQ(json_escape("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes through
  EXPECT_EQ(JsonLine().add("k\"ey", "v\nal").str(), "{\"k\\\"ey\":\"v\\nal\"}");
}

TEST(JsonWriter, NumbersRoundTripAndNonFiniteIsNull) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits32;
  for (int i = 0; i < 20000; ++i) {
    uint32_t b = bits32(rng);
    float f;
    std::memcpy(&f, &b, 4);
    if (!std::isfinite(f)) continue;
    const std::string s = json_number(f);
    ASSERT_EQ(std::strtof(s.c_str(), nullptr), f) << s;
    uint64_t b64 = (uint64_t(bits32(rng)) << 32) | bits32(rng);
    double d;
    std::memcpy(&d, &b64, 8);
    if (!std::isfinite(d)) continue;
    const std::string sd = json_number(d);
    ASSERT_EQ(std::strtod(sd.c_str(), nullptr), d) << sd;
  }
  EXPECT_EQ(json_number(0.1f), "0.1");
  EXPECT_EQ(json_number(0.1), "0.1");
  EXPECT_EQ(json_number(1.0f / 3.0f), "0.33333334");
  EXPECT_EQ(json_number(std::numeric_limits<float>::max()), "3.4028235e+38");
  EXPECT_EQ(json_number(std::nanf("")), "null");
  EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(JsonLine().add("loss", std::nanf("")).str(), "{\"loss\":null}");
}

TEST(JsonWriter, StepScanner) {
  EXPECT_EQ(json_line_step("{\"step\":12,\"loss\":1}"), 12);
  EXPECT_EQ(json_line_step(" { \"loss\" : 1 , \"step\" : -3 }"), -3);
  EXPECT_EQ(json_line_step("{\"note\":\"\\\"step\\\":5\",\"step\":7}"), 7);
  EXPECT_EQ(json_line_step("{\"x\":{\"step\":5},\"step\":8}"), 8);
  EXPECT_EQ(json_line_step("{\"x\":{\"step\":5}}"), std::nullopt);
  EXPECT_EQ(json_line_step("{\"step\":1.5}"), std::nullopt);
  EXPECT_EQ(json_line_step("{\"step\":\"3\"}"), std::nullopt);
  EXPECT_EQ(json_line_step("not json"), std::nullopt);
  EXPECT_EQ(json_line_step("{\"step\":"), std::nullopt);
}

std::string step_line(int64_t step) { return JsonLine().add("step", step).add("loss", 2.5f).str() + "\n"; }

TEST(MetricsSink, FreshFileTruncates) {
  test::TempDir dir;
  const std::string path = dir.file("metrics.jsonl");
  test::write_file(path, "old junk\n");
  {
    MetricsSink sink(path, -1);
    sink.write(JsonLine().add("step", 1).add("loss", 2.5f));
    EXPECT_EQ(test::read_file(path), step_line(1));  // flushed per line
    sink.write(JsonLine().add("step", 2).add("loss", 2.5f));
  }
  EXPECT_EQ(test::read_file(path), step_line(1) + step_line(2));
}

TEST(MetricsSink, ResumeDropsRecordsAfterTheStep) {
  test::TempDir dir;
  const std::string path = dir.file("metrics.jsonl");
  const std::string header = "{\"run\":\"gpt2\",\"world\":8}\n";
  std::string content = header;
  for (int s = 0; s <= 30; s += 10) content += step_line(s);
  content += "{\"event\":\"eval\"}\n";  // stepless record after a dropped one: dropped too
  content += "{\"step\":40,\"lo";       // torn write
  test::write_file(path, content);
  {
    MetricsSink sink(path, 20);
    EXPECT_EQ(test::read_file(path), header + step_line(0) + step_line(10) + step_line(20));
    sink.write(JsonLine().add("step", 21).add("loss", 2.5f));
  }
  EXPECT_EQ(test::read_file(path), header + step_line(0) + step_line(10) + step_line(20) + step_line(21));
  {  // resuming past everything keeps the file as is
    MetricsSink sink(path, 1000);
  }
  EXPECT_EQ(test::read_file(path), header + step_line(0) + step_line(10) + step_line(20) + step_line(21));
  {  // resuming with no file creates one
    MetricsSink sink(dir.file("new.jsonl"), 5);
    sink.write(JsonLine().add("step", 6).add("loss", 2.5f));
  }
  EXPECT_EQ(test::read_file(dir.file("new.jsonl")), step_line(6));
}

TEST(MetricsSink, MissingDirectoryIsAClearError) {
  test::TempDir dir;
  try {
    MetricsSink sink(dir.file("missing/metrics.jsonl"), -1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("missing/metrics.jsonl"), std::string::npos);
  }
}

}  // namespace
}  // namespace tt
