// Checkpoint container and atomic file writes: round trips, every corruption class reported with
// the file and the damaged part, directory helpers (newest complete, prune).
#include "core/checkpoint_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "tests/test_util.h"

namespace tt {
namespace {

using test::TempDir;

// Runs fn, expecting a tt::Error of `kind` whose message contains every needle.
template <typename Fn>
Error expect_error(Fn&& fn, ErrorKind kind, std::vector<std::string> needles) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "missing '" << n << "' in: " << e.what();
    return e;
  }
  ADD_FAILURE() << "no tt::Error thrown";
  return Error(ErrorKind::kInternal, "none");
}

// Writes a checkpoint with a few sections; returns the "model" payload.
std::vector<float> write_sample(const std::string& path, int64_t seed = 1) {
  std::vector<float> model(1000);
  std::iota(model.begin(), model.end(), float(seed));
  CheckpointWriter w;
  w.add_string("config", "n_layer: 12\n");
  w.add("model", model.data(), model.size() * sizeof(float));
  w.add("empty", nullptr, 0);
  w.add_string("meta", "{\"step\":" + std::to_string(seed) + "}");
  w.write(path);
  return model;
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(offset));
  char c;
  f.read(&c, 1);
  c ^= 0x5a;
  f.seekp(std::streamoff(offset));
  f.write(&c, 1);
}

uint64_t find_offset(const std::string& path, const std::string& needle) {
  std::string content = test::read_file(path);
  size_t at = content.find(needle);
  EXPECT_NE(at, std::string::npos);
  return at;
}

TEST(CheckpointIo, RoundTripsSectionsInOrder) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  const auto model = write_sample(path);
  CheckpointReader r(path);
  EXPECT_EQ(r.names(), (std::vector<std::string>{"config", "model", "empty", "meta"}));
  EXPECT_EQ(r.string("config"), "n_layer: 12\n");
  EXPECT_EQ(r.string("meta"), "{\"step\":1}");
  EXPECT_TRUE(r.has("empty"));
  EXPECT_EQ(r.bytes("empty").size(), 0u);
  EXPECT_FALSE(r.has("adam_m"));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.bytes("model").data()) % 8, 0u);
  std::vector<float> back(model.size());
  r.copy_to("model", back.data(), back.size() * sizeof(float));
  EXPECT_EQ(back, model);
  const std::string taken = CheckpointReader(path).bytes("model");
  EXPECT_EQ(taken.size(), model.size() * sizeof(float));
}

TEST(CheckpointIo, LargeSectionAndOwnedBuffers) {
  TempDir dir;
  const std::string path = dir.file("big.ckpt");
  std::string big(10 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char((i * 2654435761u) >> 13);
  const std::string expected = big;
  CheckpointWriter w;
  w.add_string("x", "odd-length");  // misaligns what follows unless padded
  w.add_owned("big", std::move(big));
  for (int i = 0; i < 5; ++i) w.add_string("s" + std::to_string(i), std::string(size_t(i), 'a'));
  w.write(path);
  CheckpointReader r(path);
  EXPECT_EQ(r.bytes("big"), expected);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.bytes("big").data()) % 8, 0u);
  EXPECT_EQ(r.string("s3"), "aaa");
  CheckpointReader r2(path);
  std::string moved = r2.take("big");
  EXPECT_EQ(moved, expected);
  EXPECT_FALSE(r2.has("big"));
  verify_checkpoint(path);
}

TEST(CheckpointIo, StreamedSectionsWriteTheSameFileAsBufferedOnes) {
  // A 10 MB section handed over in uneven pieces, between sections that misalign it, gives the very
  // bytes of the buffered writer (so its patched CRC and the footer agree), and reads back.
  TempDir dir;
  std::string big(10 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char((i * 2654435761u) >> 13);
  CheckpointWriter buffered, streamed;
  for (CheckpointWriter* w : {&buffered, &streamed}) w->add_string("x", "odd-length");
  buffered.add("big", big.data(), big.size());
  streamed.add_streamed("big", big.size(), [&](const CheckpointWriter::Sink& sink) {
    for (size_t at = 0, piece = 1; at < big.size(); at += piece, piece = piece * 3 + 7)
      sink(big.data() + at, std::min(piece, big.size() - at));
  });
  for (CheckpointWriter* w : {&buffered, &streamed}) w->add_string("after", "tail");
  buffered.write(dir.file("buffered.ckpt"));
  streamed.write(dir.file("streamed.ckpt"));
  EXPECT_TRUE(test::read_file(dir.file("streamed.ckpt")) == test::read_file(dir.file("buffered.ckpt")));
  verify_checkpoint(dir.file("streamed.ckpt"));
  EXPECT_EQ(CheckpointReader(dir.file("streamed.ckpt")).bytes("big"), big);
}

TEST(CheckpointIo, StreamedSectionOfTheWrongSizeLeavesTheOldFile) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  write_sample(path);
  const std::string before = test::read_file(path);
  const std::vector<char> bytes(100, 'z');
  for (size_t produced : {size_t(99), size_t(101)}) {
    CheckpointWriter w;
    w.add_streamed("params", 100, [&](const CheckpointWriter::Sink& sink) {
      sink(bytes.data(), std::min<size_t>(produced, 100));
      if (produced > 100) sink(bytes.data(), produced - 100);
    });
    expect_error([&] { w.write(path); }, ErrorKind::kInternal, {"params", "100 bytes"});
    EXPECT_TRUE(test::read_file(path) == before);
  }
}

TEST(CheckpointIo, SectionsLeftInTheFileAreVerifiedAndReadByRange) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  const auto model = write_sample(path);
  const CheckpointReader r(path, [](const std::string& name) { return name != "model"; });
  EXPECT_EQ(r.names(), (std::vector<std::string>{"config", "model", "empty", "meta"}));
  EXPECT_EQ(r.string("config"), "n_layer: 12\n");
  EXPECT_EQ(r.section_bytes("model"), model.size() * sizeof(float));
  expect_error([&] { r.bytes("model"); }, ErrorKind::kInternal, {"not kept in memory"});  // never loaded
  std::vector<float> part(10);
  r.read_range("model", 500 * sizeof(float), part.data(), part.size() * sizeof(float));
  EXPECT_EQ(part, std::vector<float>(model.begin() + 500, model.begin() + 510));
  std::vector<float> all(model.size());
  r.copy_to("model", all.data(), all.size() * sizeof(float));
  EXPECT_EQ(all, model);
  expect_error([&] { r.read_range("model", 996 * sizeof(float), part.data(), 10 * sizeof(float)); },
               ErrorKind::kCheckpoint, {"past the end", "'model'"});
  // A checkpoint written over the path since (temp file + rename) does not change what it reads.
  write_sample(path, 7);
  r.read_range("model", 500 * sizeof(float), part.data(), part.size() * sizeof(float));
  EXPECT_EQ(part, std::vector<float>(model.begin() + 500, model.begin() + 510));
  // A damaged byte in a section left in the file is still caught when the reader opens it.
  flip_byte(path, find_offset(path, "n_layer") + 64);
  expect_error([&] { CheckpointReader(path, [](const std::string& name) { return name != "model"; }); },
               ErrorKind::kCheckpoint, {"checksum mismatch", "'model'"});
}

TEST(CheckpointIo, MissingSectionAndShapeMismatchAreExplained) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  write_sample(path);
  CheckpointReader r(path);
  expect_error([&] { r.bytes("adam_m"); }, ErrorKind::kCheckpoint, {"adam_m", "config, model, empty, meta", path});
  std::vector<float> dst(10);
  expect_error([&] { r.copy_to("model", dst.data(), dst.size() * sizeof(float)); }, ErrorKind::kCheckpoint,
               {"'model'", "4000", "40 ", "different model shape"});
}

TEST(CheckpointIo, CorruptSectionByteNamesTheSection) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  write_sample(path);
  flip_byte(path, find_offset(path, "n_layer"));
  expect_error([&] { CheckpointReader r(path); }, ErrorKind::kCheckpoint,
               {path, "checksum mismatch in section 'config'", "resume from an earlier checkpoint in " + dir.path()});
  write_sample(path);
  // A byte inside "model"'s data: after the name, u64 length and u32 crc, padded to 8 bytes.
  const uint64_t header_end = find_offset(path, "model") + 5 + 12;
  flip_byte(path, (header_end + 7) / 8 * 8 + 9);
  expect_error([&] { verify_checkpoint(path); }, ErrorKind::kCheckpoint, {"section 'model'"});
}

TEST(CheckpointIo, CorruptHeaderIsCaughtByTheFooter) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  write_sample(path);
  flip_byte(path, find_offset(path, "meta") + 1);  // a section name
  expect_error([&] { CheckpointReader r(path); }, ErrorKind::kCheckpoint, {"checksum mismatch in the footer"});
}

TEST(CheckpointIo, TruncationAndBadMagic) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  write_sample(path);
  const auto size = std::filesystem::file_size(path);
  for (uint64_t keep : {uint64_t(0), uint64_t(5), uint64_t(20), size / 2, size - 1}) {
    write_sample(path);
    std::filesystem::resize_file(path, keep);
    expect_error([&] { CheckpointReader r(path); }, ErrorKind::kCheckpoint, {path, "cut short"});
  }
  // Footer intact but a section's bytes missing from the middle.
  write_sample(path);
  std::string content = test::read_file(path);
  content.erase(200, 64);
  test::write_file(path, content);
  expect_error([&] { CheckpointReader r(path); }, ErrorKind::kCheckpoint, {path});

  write_sample(path);
  flip_byte(path, 0);
  expect_error([&] { CheckpointReader r(path); }, ErrorKind::kCheckpoint, {"bad magic", path});
  test::write_file(path, "this is a text file, not a checkpoint at all");
  expect_error([&] { CheckpointReader r(path); }, ErrorKind::kCheckpoint, {"bad magic"});
  expect_error([&] { CheckpointReader r(dir.file("missing.ckpt")); }, ErrorKind::kCheckpoint,
               {"cannot open", "missing.ckpt"});
}

// Found by tests/fuzz (checkpoint): a section header that runs into the footer made the length
// check wrap, and a 44-byte file asked for a 4 GB section buffer.
TEST(CheckpointIo, SectionHeaderRunningIntoTheFooterIsCorruption) {
  TempDir dir;
  const std::string path = dir.file("a.ckpt");
  test::write_file(path, test::read_file(std::string(TT_SOURCE_DIR) +
                                         "/tests/fuzz/regressions/checkpoint/section_header_into_footer.ckpt"));
  expect_error([&] { CheckpointReader r(path); }, ErrorKind::kCheckpoint, {path, "runs into the footer"});
  expect_error([&] { verify_checkpoint(path); }, ErrorKind::kCheckpoint, {"runs into the footer"});
}

TEST(CheckpointIo, DirectoryHelpers) {
  TempDir dir;
  EXPECT_EQ(checkpoint_path(dir.path(), 42), dir.path() + "/step_00000042.ckpt");
  EXPECT_TRUE(list_checkpoints(dir.file("nope")).empty());
  EXPECT_EQ(newest_complete_checkpoint(dir.file("nope")), "");
  EXPECT_EQ(newest_complete_checkpoint(dir.path()), "");
  for (int64_t step : {100, 20, 300, 4000}) write_sample(checkpoint_path(dir.path(), step), step);
  test::write_file(checkpoint_path(dir.path(), 5000) + ".tmp.1234", "partial");
  test::write_file(dir.file("step_abc.ckpt"), "x");
  test::write_file(dir.file("notes.txt"), "x");
  auto list = list_checkpoints(dir.path());
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].first, 20);
  EXPECT_EQ(list[3].first, 4000);
  EXPECT_EQ(list[3].second, checkpoint_path(dir.path(), 4000));

  EXPECT_EQ(newest_complete_checkpoint(dir.path()), checkpoint_path(dir.path(), 4000));
  // Corrupt the newest: skipped in favour of step 300.
  flip_byte(checkpoint_path(dir.path(), 4000), 100);
  EXPECT_EQ(newest_complete_checkpoint(dir.path()), checkpoint_path(dir.path(), 300));
  std::filesystem::resize_file(checkpoint_path(dir.path(), 300), 50);
  EXPECT_EQ(newest_complete_checkpoint(dir.path()), checkpoint_path(dir.path(), 100));

  // Another process's temp file is an interrupted write's leftover (the run directory has one
  // writer): pruning removes it, even with keep 0. This process's own, and other names, stay.
  const std::string own_tmp = checkpoint_path(dir.path(), 6000) + ".tmp." + std::to_string(::getpid());
  test::write_file(own_tmp, "in progress");
  prune_checkpoints(dir.path(), 0);
  EXPECT_EQ(list_checkpoints(dir.path()).size(), 4u);
  EXPECT_FALSE(std::filesystem::exists(checkpoint_path(dir.path(), 5000) + ".tmp.1234"));
  EXPECT_TRUE(std::filesystem::exists(own_tmp));
  EXPECT_TRUE(std::filesystem::exists(dir.file("notes.txt")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("step_abc.ckpt")));
  prune_checkpoints(dir.path(), 2);
  list = list_checkpoints(dir.path());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, 300);
  EXPECT_EQ(list[1].first, 4000);
  prune_checkpoints(dir.path(), 5);
  EXPECT_EQ(list_checkpoints(dir.path()).size(), 2u);
  expect_error([&] { prune_checkpoints(dir.path(), -1); }, ErrorKind::kConfig, {"keep"});
}

TEST(CheckpointIo, DuplicateSectionIsABug) {
  CheckpointWriter w;
  w.add_string("a", "1");
  expect_error([&] { w.add_string("a", "2"); }, ErrorKind::kInternal, {"duplicate", "'a'"});
}

// A checkpoint that cannot be written (disk full, read-only or missing directory) is a checkpoint
// error (exit 4) naming the file, not a generic runtime error, and leaves nothing behind.
TEST(CheckpointIo, WriteFailureIsACheckpointErrorNamingTheFile) {
  TempDir dir;
  const std::string path = dir.file("missing/step_00000004.ckpt");
  expect_error([&] { write_sample(path); }, ErrorKind::kCheckpoint, {path, "No such file or directory"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing")));
  // A failing producer is not an I/O failure of the file: its own error propagates unchanged.
  CheckpointWriter w;
  w.add_streamed("params", 8, [](const CheckpointWriter::Sink&) { throw Error(ErrorKind::kRuntime, "peer died"); });
  expect_error([&] { w.write(dir.file("step_00000008.ckpt")); }, ErrorKind::kRuntime, {"peer died"});
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a temp file was left behind";
}

// ---- core/fs -------------------------------------------------------------------------------

TEST(AtomicWrite, ReplacesFileAndLeavesNoTemp) {
  TempDir dir;
  const std::string path = dir.file("f.txt");
  atomic_write_string(path, "one");
  atomic_write_file(path, [](FileWriter& w) {
    w.write("tw");
    w.write_zeros(2);
    w.write(std::string(3 << 20, 'x'));  // larger than the buffer
    EXPECT_EQ(w.offset(), 4u + (3u << 20));
  });
  const std::string content = test::read_file(path);
  EXPECT_EQ(content.size(), 4u + (3u << 20));
  EXPECT_EQ(content.substr(0, 4), std::string("tw\0\0", 4));
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) (void)e, ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(AtomicWrite, ThrowingWriterLeavesOldFileIntact) {
  TempDir dir;
  const std::string path = dir.file("f.txt");
  atomic_write_string(path, "old contents");
  auto e = expect_error(
      [&] {
        atomic_write_file(path, [](FileWriter& w) {
          w.write(std::string(5 << 20, 'n'));
          throw std::runtime_error("simulated failure");
        });
      },
      ErrorKind::kRuntime, {"simulated failure"});
  EXPECT_EQ(e.where(), path);
  EXPECT_EQ(test::read_file(path), "old contents");
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) (void)entry, ++entries;
  EXPECT_EQ(entries, 1) << "temp file left behind";
  // A tt::Error from the writer propagates unchanged.
  expect_error([&] { atomic_write_file(path, [](FileWriter&) { throw Error(ErrorKind::kData, "bad data"); }); },
               ErrorKind::kData, {"bad data"});
  EXPECT_EQ(test::read_file(path), "old contents");
}

TEST(AtomicWrite, MissingDirectoryAndEnsureDir) {
  TempDir dir;
  expect_error([&] { atomic_write_string(dir.file("no/such/f"), "x"); }, ErrorKind::kRuntime,
               {"no/such/f", "directory"});
  ensure_dir(dir.file("a/b/c"));
  ensure_dir(dir.file("a/b/c"));
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("a/b/c")));
  test::write_file(dir.file("plain"), "x");
  expect_error([&] { ensure_dir(dir.file("plain/sub")); }, ErrorKind::kRuntime, {"plain/sub", "cannot create"});
  expect_error([&] { ensure_dir(dir.file("plain")); }, ErrorKind::kRuntime, {"plain"});
  // The caller's kind: the trainer's checkpoint folder that cannot be made is a checkpoint error.
  expect_error([&] { ensure_dir(dir.file("plain/checkpoints"), ErrorKind::kCheckpoint); }, ErrorKind::kCheckpoint,
               {"plain/checkpoints", "cannot create"});
}

}  // namespace
}  // namespace tt
