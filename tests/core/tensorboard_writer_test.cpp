// The TensorBoard event writer: masked CRCs and TFRecord framing against bytes made by TensorBoard's
// own Python RecordWriter, our Event schema's wire bytes against TensorBoard's, events read back
// with the generated classes (file version, START, config text, one scalar per numeric metrics
// field), the tag mapping, and failures that warn once and stop the writer.
#include "core/tensorboard_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/tfevents.pb.h"
#include "core/tfrecord.h"
#include "tests/test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<tfevents::Event> read_events(const std::string& path) {
  std::vector<tfevents::Event> events;
  for (const std::string& data : tfrecord_split(test::read_file(path), path)) {
    events.emplace_back();
    EXPECT_TRUE(events.back().ParseFromString(data)) << path;
  }
  return events;
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Expected bytes below were made with tensorboard 2.21's Python writer
// (tensorboard.summary.writer.record_writer.RecordWriter, tensorboard.compat.proto.event_pb2).
TEST(TfRecord, MaskedCrcMatchesTensorBoard) {
  EXPECT_EQ(masked_crc32c(crc32c("123456789", 9)), 0xc78ab0e5u);
  EXPECT_EQ(unmask_crc32c(0xc78ab0e5u), 0xE3069283u);
}

TEST(TfRecord, FrameIsByteIdenticalToTensorBoardsRecordWriter) {
  EXPECT_EQ(tfrecord_frame("hello"), from_hex("0500000000000000eab2043e68656c6c6fbb1f1c19"));
  EXPECT_EQ(tfrecord_frame("").size(), 16u);
  const std::vector<std::string> back = tfrecord_split(tfrecord_frame("hello") + tfrecord_frame(""), "mem");
  EXPECT_EQ(back, (std::vector<std::string>{"hello", ""}));
}

TEST(TfRecord, SplitNamesTheFileOnCorruptionOrTruncation) {
  std::string bytes = tfrecord_frame("first") + tfrecord_frame("second");
  bytes[16 + 5 + 12 + 2] ^= 1;  // a byte of the second record's data
  try {
    tfrecord_split(bytes, "run/tb/events.x");
    FAIL() << "corruption not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(e.where().find("run/tb/events.x (record 1 at byte 21)"), std::string::npos) << e.where();
    EXPECT_NE(e.problem().find("data CRC"), std::string::npos) << e.problem();
  }
  const std::string whole = tfrecord_frame("first");
  EXPECT_THROW(tfrecord_split(whole.substr(0, whole.size() - 1), "f"), Error);
  EXPECT_THROW(tfrecord_split(whole.substr(0, 10), "f"), Error);
}

TEST(TfEventsSchema, ScalarEventHasTensorBoardsWireBytes) {
  tfevents::Event event;
  event.set_wall_time(1.5);
  event.set_step(7);
  tfevents::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag("train/loss");
  v->set_simple_value(2.5f);
  EXPECT_EQ(event.SerializeAsString(), from_hex("09000000000000f83f10072a130a110a0a747261696e2f6c6f73731500002040"));
  EXPECT_EQ(
      tfrecord_frame(event.SerializeAsString()),
      from_hex("200000000000000029eda95009000000000000f83f10072a130a110a0a747261696e2f6c6f737315000020402508fb34"));
}

TEST(TensorBoardWriter, WritesVersionStartConfigAndEveryNumericMetricsField) {
  test::TempDir dir;
  std::string path;
  {
    TensorBoardWriter writer(dir.file("tb"), 1, "train {\n  steps: 3\n}\n");
    ASSERT_TRUE(writer.active());
    path = writer.path();
    JsonLine record;
    record.add("step", 1).add("loss", 2.75f).add("lr", 3e-4f).add("tokens_per_s", 12345.678).add("skipped", true);
    record.add("note", "text").add("peak_memory_bytes", int64_t(123456789)).add("val_loss", std::nanf(""));
    writer.write_metrics(record);
    JsonLine no_step;
    no_step.add("loss", 1.0f);
    writer.write_metrics(no_step);  // ignored
  }
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(dir.file("tb")));
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u) << path;

  const std::vector<tfevents::Event> events = read_events(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[1].step(), 1);
  EXPECT_EQ(events[1].session_log().status(), tfevents::SessionLog::START);
  for (const auto& e : events) EXPECT_NEAR(e.wall_time(), double(std::time(nullptr)), 60);

  ASSERT_EQ(events[2].summary().value_size(), 1);
  const auto& text = events[2].summary().value(0);
  EXPECT_EQ(events[2].step(), 1);
  EXPECT_EQ(text.tag(), "config");
  EXPECT_EQ(text.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(text.tensor().dtype(), tfevents::DT_STRING);
  ASSERT_EQ(text.tensor().string_val_size(), 1);
  EXPECT_EQ(text.tensor().string_val(0), "```\ntrain {\n  steps: 3\n}\n```");

  std::map<std::string, float> scalars;
  EXPECT_EQ(events[3].step(), 1);
  for (const auto& v : events[3].summary().value()) {
    ASSERT_TRUE(v.has_simple_value()) << v.tag();
    scalars[v.tag()] = v.simple_value();
  }
  // No "skipped" (a bool), "note" (a string) or "val/loss" (NaN is written as null).
  EXPECT_EQ(scalars, (std::map<std::string, float>{{"train/loss", 2.75f},
                                                   {"train/lr", 3e-4f},
                                                   {"throughput/tokens_per_s", float(12345.678)},
                                                   {"memory/peak_bytes", float(123456789)}}));
}

TEST(TensorBoardWriter, TwoWritersInOneSecondGetTwoFiles) {
  test::TempDir dir;
  TensorBoardWriter first(dir.file("tb"), 1, "");
  TensorBoardWriter second(dir.file("tb"), 5, "");
  ASSERT_TRUE(first.active() && second.active());
  EXPECT_NE(first.path(), second.path());
  EXPECT_LT(first.path(), second.path()) << "the reader takes files in name order";
  EXPECT_EQ(event_files(dir.file("tb")).size(), 2u);
}

TEST(TensorBoardWriter, TagsGroupFieldsByKind) {
  EXPECT_EQ(tensorboard_tag("loss"), "train/loss");
  EXPECT_EQ(tensorboard_tag("val_loss"), "val/loss");
  EXPECT_EQ(tensorboard_tag("grad_norm"), "train/grad_norm");
  EXPECT_EQ(tensorboard_tag("tokens_per_s"), "throughput/tokens_per_s");
  EXPECT_EQ(tensorboard_tag("step_s"), "time/step_s");
  EXPECT_EQ(tensorboard_tag("forward_s"), "time/forward_s");
  EXPECT_EQ(tensorboard_tag("exposed_comm_s"), "comm/exposed_comm_s");
  EXPECT_EQ(tensorboard_tag("param_gather_s"), "comm/param_gather_s");
  EXPECT_EQ(tensorboard_tag("peak_memory_bytes"), "memory/peak_bytes");
  EXPECT_EQ(tensorboard_tag("val_accuracy"), "val/accuracy");  // future fields, by shape
  EXPECT_EQ(tensorboard_tag("activation_bytes"), "memory/activation_bytes");
  EXPECT_EQ(tensorboard_tag("checkpoint_s"), "time/checkpoint_s");
  EXPECT_EQ(tensorboard_tag("loss_scale"), "train/loss_scale");
}

TEST(TensorBoardWriter, CodeBlockFenceOutgrowsBackticksInTheText) {
  EXPECT_EQ(markdown_code_block("a"), "```\na\n```");
  EXPECT_EQ(markdown_code_block("a ```` b\n"), "`````\na ```` b\n`````");
}

TEST(TensorBoardWriter, WriteFailureWarnsOnceNamingTheFileAndStops) {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no /dev/full here";
  testing::internal::CaptureStderr();
  TensorBoardWriter writer(fd, "/dev/full", 1, "config");
  writer.write_scalar(1, "train/loss", 1.0f);
  writer.write_scalar(2, "train/loss", 1.0f);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(writer.active());
  EXPECT_NE(err.find("TensorBoard event file /dev/full: write failed: No space left on device"), std::string::npos)
      << err;
  EXPECT_NE(err.find("metrics.jsonl and checkpoints continue"), std::string::npos) << err;
  EXPECT_EQ(err.find("write failed"), err.rfind("write failed")) << "warned more than once:\n" << err;
}

TEST(TensorBoardWriter, UncreatableDirectoryWarnsAndStops) {
  test::TempDir dir;
  test::write_file(dir.file("tb"), "a file where the directory should be");
  testing::internal::CaptureStderr();
  TensorBoardWriter writer(dir.file("tb/sub"), 1, "config");
  writer.write_scalar(1, "train/loss", 1.0f);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(writer.active());
  EXPECT_NE(err.find("cannot create the directory " + dir.file("tb/sub")), std::string::npos) << err;
  EXPECT_EQ(test::read_file(dir.file("tb")), "a file where the directory should be");
}

}  // namespace
}  // namespace tt
