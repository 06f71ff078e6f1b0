// A run's TensorBoard event file (<run_dir>/tb/events.out.tfevents.<unix_time>.<hostname>),
// written by rank 0 next to metrics.jsonl, readable by TensorBoard without TensorFlow or Python at
// run time. Design:
// - The trainer hands every metrics.jsonl record (a JsonLine) to write_metrics(), which turns each
//   numeric field into a scalar, so a field added to metrics.jsonl shows up in TensorBoard with no
//   second list to keep in step. Tags come from tensorboard_tag() (the mapping is in
//   docs/tensorboard.md).
// - Each file starts with file_version "brain.Event:2", a SessionLog START at the run's first step
//   and the effective config as a text summary. A resumed run opens a new file; its START makes
//   TensorBoard's reader drop what earlier files logged at that step and after, as it does for
//   TensorFlow's restarted jobs, so steps the resumed run repeats appear once.
// - Every event is one framed record (core/tfrecord.h) written with one write() and no user-space
//   buffer, so TensorBoard sees it at once and a crash loses at most the record being written.
// - TensorBoard output must never cost the run: the writer does not throw. The first failure
//   (creating the directory or file, or a write) logs one warning naming the file, and later
//   calls do nothing.
#pragma once

#include <cstdint>
#include <string>

#include "core/json_writer.h"

namespace tt {

namespace tfevents {
class Event;
}

class TensorBoardWriter {
 public:
  // Creates `dir` if needed and a new event file in it (a ".1", ".2" ... suffix when another file
  // already has the name), then writes the file version, a SessionLog START at `first_step` and,
  // when not empty, `config_text` as the text summary "config" at `first_step`.
  TensorBoardWriter(const std::string& dir, int64_t first_step, const std::string& config_text);
  // Adopts the open descriptor `fd` of the file `path` (tests: a descriptor of /dev/full) and writes
  // the same opening events.
  TensorBoardWriter(int fd, const std::string& path, int64_t first_step, const std::string& config_text);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One event at the record's integer "step" holding every finite numeric field but "step" as a
  // scalar (as float32). Booleans, strings, nested values and nulls (NaN/Inf) are skipped; a record
  // without an integer "step" is ignored.
  void write_metrics(const JsonLine& record);
  void write_scalar(int64_t step, const std::string& tag, float value);
  void write_text(int64_t step, const std::string& tag, const std::string& markdown);

  // False once a failure has stopped the writer.
  bool active() const { return fd_ >= 0; }
  // The event file ("" when none could be created).
  const std::string& path() const { return path_; }

 private:
  void write_opening(int64_t first_step, const std::string& config_text);
  void write_event(tfevents::Event& event);
  void fail(const std::string& what);

  std::string path_;
  int fd_ = -1;
};

// The TensorBoard tag of a metrics.jsonl field: "loss" -> "train/loss", "val_loss" -> "val/loss",
// "step_s" -> "time/step_s", "peak_memory_bytes" -> "memory/peak_bytes" ... (docs/tensorboard.md).
std::string tensorboard_tag(const std::string& metrics_field);

// `text` as a Markdown code block (fenced with more backticks than any run in `text`), so the
// text plugin shows it verbatim.
std::string markdown_code_block(const std::string& text);

// "events.out.tfevents.<unix_time>.<hostname>" for `unix_time`.
std::string event_file_name(int64_t unix_time);

}  // namespace tt
