// TensorBoard event file writer (see tensorboard_writer.h). Events are built with the classes
// generated from core/tfevents.proto, serialized, framed (core/tfrecord.h) and written whole.
#include "core/tensorboard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "core/tfevents.pb.h"
#include "core/tfrecord.h"

namespace tt {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string event_file_name(int64_t unix_time) {
  return "events.out.tfevents." + std::to_string(unix_time) + "." + hostname();
}

std::string tensorboard_tag(const std::string& field) {
  static const std::pair<const char*, const char*> kKnown[] = {
      {"loss", "train/loss"},
      {"lr", "train/lr"},
      {"grad_norm", "train/grad_norm"},
      {"val_loss", "val/loss"},
      {"tokens_per_s", "throughput/tokens_per_s"},
      {"mfu", "throughput/mfu"},
      {"comm_s", "comm/comm_s"},
      {"exposed_comm_s", "comm/exposed_comm_s"},
      {"param_gather_s", "comm/param_gather_s"},
      {"peak_memory_bytes", "memory/peak_bytes"},
  };
  for (const auto& [name, tag] : kKnown)
    if (field == name) return tag;
  // Fields without an entry are grouped by their name's shape.
  if (field.rfind("val_", 0) == 0) return "val/" + field.substr(4);
  if (ends_with(field, "_bytes")) return "memory/" + field;
  if (ends_with(field, "_s")) return "time/" + field;
  return "train/" + field;
}

std::string markdown_code_block(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  const bool ends_in_newline = !text.empty() && text.back() == '\n';
  return fence + "\n" + text + (ends_in_newline ? "" : "\n") + fence;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, int64_t first_step, const std::string& config_text) {
  const std::string base = dir + "/" + event_file_name(int64_t(now_s()));
  path_ = base;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    fail("cannot create the directory " + dir + ": " + ec.message());
    return;
  }
  for (int suffix = 0; fd_ < 0; ++suffix) {
    path_ = suffix == 0 ? base : base + "." + std::to_string(suffix);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || suffix >= 1000)) {
      fail(std::string("cannot create it: ") + std::strerror(errno));
      return;
    }
  }
  write_opening(first_step, config_text);
}

TensorBoardWriter::TensorBoardWriter(int fd, const std::string& path, int64_t first_step,
                                     const std::string& config_text)
    : path_(path), fd_(fd) {
  write_opening(first_step, config_text);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::write_opening(int64_t first_step, const std::string& config_text) {
  tfevents::Event version;
  version.set_file_version("brain.Event:2");
  write_event(version);
  tfevents::Event start;
  start.set_step(first_step);
  start.mutable_session_log()->set_status(tfevents::SessionLog::START);
  write_event(start);
  if (!config_text.empty()) write_text(first_step, "config", markdown_code_block(config_text));
}

void TensorBoardWriter::write_metrics(const JsonLine& record) {
  if (!active()) return;
  nlohmann::json fields = nlohmann::json::parse(record.str(), nullptr, /*allow_exceptions=*/false);
  if (!fields.is_object() || !fields.contains("step") || !fields["step"].is_number_integer()) return;
  tfevents::Event event;
  event.set_step(fields["step"].get<int64_t>());
  tfevents::Summary* summary = event.mutable_summary();
  for (const auto& [key, value] : fields.items()) {
    if (key == "step" || !value.is_number()) continue;  // is_number() is false for bool and null
    const double number = value.get<double>();
    if (!(std::abs(number) <= std::numeric_limits<double>::max())) continue;
    tfevents::Summary::Value* v = summary->add_value();
    v->set_tag(tensorboard_tag(key));
    v->set_simple_value(float(number));
  }
  if (summary->value_size() > 0) write_event(event);
}

void TensorBoardWriter::write_scalar(int64_t step, const std::string& tag, float value) {
  if (!active()) return;
  tfevents::Event event;
  event.set_step(step);
  tfevents::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  write_event(event);
}

void TensorBoardWriter::write_text(int64_t step, const std::string& tag, const std::string& markdown) {
  if (!active()) return;
  tfevents::Event event;
  event.set_step(step);
  tfevents::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tfevents::TensorProto* tensor = v->mutable_tensor();
  tensor->set_dtype(tfevents::DT_STRING);
  tensor->mutable_tensor_shape();  // no dims: one string
  tensor->add_string_val(markdown);
  write_event(event);
}

void TensorBoardWriter::write_event(tfevents::Event& event) {
  if (!active()) return;
  event.set_wall_time(now_s());
  const std::string record = tfrecord_frame(event.SerializeAsString());
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail(std::string("write failed: ") + (n < 0 ? std::strerror(errno) : "no progress"));
      return;
    }
    done += size_t(n);
  }
}

void TensorBoardWriter::fail(const std::string& what) {
  log_warn("TensorBoard event file ", path_, ": ", what,
           "; no more TensorBoard events for this run (metrics.jsonl and checkpoints continue)");
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace tt
