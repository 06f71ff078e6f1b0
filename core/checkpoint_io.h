// Checkpoint container: an ordered list of named byte sections ("config", "model", "adam_m",
// "adam_v", "rng", "loader", "meta", ...) in one self-verifying file. What goes into a section is
// the caller's business; this layer guarantees a checkpoint is either complete and intact or
// rejected with a message naming the file, the damaged part and how to recover.
//
// File layout (all integers little-endian):
//   "TTCKPT01"  u32 version (=1)  u32 section_count
//   per section: u32 name_len, name, u64 byte_len, u32 crc32c(bytes), zero padding so the bytes
//                start at an 8-byte-aligned file offset, bytes
//   footer:      u32 crc32c(every byte before the footer)  "TTCKEND1"
// Design: checkpoints reach ~1.5 GB (GPT-2 124M + Adam), so data is never copied needlessly: the
// writer streams caller memory straight to the file, the reader reads each section straight into
// its own buffer and checks every CRC in the same single pass (the footer CRC is assembled from
// the section CRCs with crc32c_combine). Files are written atomically (core/fs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tt {

// Collects sections, then writes them in the order added. Not thread-safe.
class CheckpointWriter {
 public:
  // Borrows data: the bytes are NOT copied and must stay valid and unchanged until write()
  // returns. Section names must be unique and non-empty (a duplicate is a bug: TT_ASSERT).
  void add(const std::string& name, const void* data, size_t bytes);
  // Copies the string (for small text sections: config, meta JSON, rng state).
  void add_string(const std::string& name, const std::string& content);
  // Takes ownership of an already-built buffer without copying it.
  void add_owned(const std::string& name, std::string&& content);
  // A section of `bytes` bytes that write() obtains from `produce` as it writes the file: produce
  // hands the bytes, in order and in pieces of any size, to the sink it is given (its CRC is
  // patched in afterwards), so no buffer of the whole section ever exists (ZeRO checkpoints gather
  // the ranks' shards chunk by chunk straight into the file). Producing other than `bytes` bytes is
  // a tt::Error(kInternal); write() then leaves the existing file untouched. produce runs once per
  // write().
  using Sink = std::function<void(const void* data, size_t bytes)>;
  void add_streamed(const std::string& name, size_t bytes, std::function<void(const Sink&)> produce);

  // Writes the checkpoint atomically (temp file + fsync + rename): on failure an existing file at
  // `path` is untouched, the temp file is removed and tt::Error(kCheckpoint) naming `path` is thrown
  // (disk full, read-only directory, ...; a tt::Error from a streamed section's producer propagates
  // unchanged). May be called more than once.
  void write(const std::string& path) const;

  size_t size() const { return sections_.size(); }

 private:
  struct Section {
    std::string name;
    const char* data;
    size_t bytes;
    size_t owned_index;                        // index into owned_, or npos when borrowed
    std::function<void(const Sink&)> produce;  // set: a streamed section (data is null)
  };
  void add_section(const std::string& name, const char* data, size_t bytes, size_t owned_index);

  std::vector<Section> sections_;
  std::vector<std::string> owned_;
};

// Reads a checkpoint into memory and verifies every checksum in the constructor. Every problem
// (missing file, bad magic, truncation, checksum mismatch naming the section or footer, missing
// section, size mismatch) is a tt::Error(ErrorKind::kCheckpoint, what, where=path, hint).
// Const methods are safe to call concurrently; take() is not.
class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string& path);
  // Keeps in memory only the sections `keep` accepts. The others are verified in the same pass
  // (streamed through a scratch buffer) and then read by range from the file (read_range), so a
  // rank can take its shard of a large tensor without holding the rest.
  CheckpointReader(const std::string& path, const std::function<bool(const std::string& name)>& keep);

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const;
  // The section's bytes (the buffer is at least 8-byte aligned). Throws naming the missing
  // section and listing the present ones.
  const std::string& bytes(const std::string& name) const;
  std::string string(const std::string& name) const { return bytes(name); }
  // Copies the section to dst after checking it holds exactly expected_bytes.
  void copy_to(const std::string& name, void* dst, size_t expected_bytes) const;
  // The section's size, and `bytes` bytes of it from byte `offset` (kept or not). A range past its
  // end is a tt::Error(kCheckpoint).
  uint64_t section_bytes(const std::string& name) const;
  // Throws tt::Error(kCheckpoint) naming the section unless it holds exactly `bytes` bytes.
  void expect_bytes(const std::string& name, uint64_t bytes) const;
  void read_range(const std::string& name, uint64_t offset, void* dst, size_t bytes) const;
  // Moves the section's buffer out (to free host memory early); the section then reads as missing.
  std::string take(const std::string& name);
  // Section names in file order.
  std::vector<std::string> names() const;

 private:
  struct Section {
    std::string name;
    std::string data;          // the bytes, when kept
    uint64_t file_offset = 0;  // where the bytes start in the file
    uint64_t bytes = 0;
    bool kept = true;
  };
  friend void parse_checkpoint(const std::string& path, std::vector<CheckpointReader::Section>* out,
                               const std::function<bool(const std::string&)>& keep, std::shared_ptr<const int>* fd_out);
  const Section& find(const std::string& name) const;

  std::string path_;
  std::vector<Section> sections_;  // file order
  std::shared_ptr<const int> fd_;  // the verified file, while sections are left in it
};

// Streams through a checkpoint verifying structure and all checksums with constant memory; throws
// exactly what CheckpointReader's constructor would.
void verify_checkpoint(const std::string& path);

// Checkpoints live at <dir>/step_<%08d>.ckpt.
std::string checkpoint_path(const std::string& dir, int64_t step);
// (step, path) of every step_N.ckpt in dir sorted by step; temp files ("*.tmp.*") and other names
// are ignored. A missing dir yields an empty list.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir);
// Path of the newest checkpoint in dir that verifies (verify_checkpoint), or "" when none does.
// A corrupt newer one is skipped with a log_warn naming it and why.
std::string newest_complete_checkpoint(const std::string& dir);
// Deletes the temp files ("step_N.ckpt.tmp.<pid>") of checkpoint writes that other processes
// began and never finished: a run killed mid-write (SIGKILL, OOM, power loss) leaves one behind
// that nothing else would ever remove, and on a nearly full disk it is what the next write lacks.
// Only safe while no other process writes checkpoints into dir (a run directory has one job).
void remove_interrupted_checkpoint_writes(const std::string& dir);
// Removes interrupted writes' temp files (above), then deletes all but the newest `keep`
// checkpoints by step (keep == 0: none). Meant to run right after a successful write, when the
// newest checkpoint is known to be good.
void prune_checkpoints(const std::string& dir, int keep);

}  // namespace tt
