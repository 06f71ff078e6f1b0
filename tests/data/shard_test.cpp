// Tests for data/shard.h: llm.c shard round trips in both widths, the byte layout, every header /
// size validation error (each must name the file), and resolve_shards over file/dir/glob.
#include "data/shard.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "tests/test_util.h"

namespace tt::data {
namespace {

using tt::test::TempDir;

// Writes a raw file: a header with the given magic/version/count and `payload_bytes` zero bytes.
void write_raw_shard(const std::string& path, int32_t magic, int32_t version, int32_t count, size_t payload_bytes) {
  std::string bytes(kShardHeaderBytes + payload_bytes, '\0');
  int32_t h[3] = {magic, version, count};
  std::memcpy(bytes.data(), h, sizeof(h));
  tt::test::write_file(path, bytes);
}

// Runs f, expects a tt::Error of `kind`, returns its message.
template <typename F>
std::string error_of(F&& f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a tt::Error";
  return "";
}

TEST(ShardTest, RoundTripUint16) {
  TempDir dir;
  std::vector<uint32_t> tokens;
  for (uint32_t i = 0; i < 5000; ++i) tokens.push_back((i * 7919u) % 65536u);
  tokens.push_back(65535);
  ASSERT_EQ(narrowest_token_width(tokens), TokenWidth::kUint16);
  const std::string path = dir.file("a.bin");
  write_shard(path, tokens, TokenWidth::kUint16);

  ShardReader r(path);
  EXPECT_EQ(r.header().magic, kShardMagicUint16);
  EXPECT_EQ(r.header().version, kShardVersionUint16);
  EXPECT_EQ(r.width(), TokenWidth::kUint16);
  EXPECT_EQ(r.num_tokens(), static_cast<int64_t>(tokens.size()));
  EXPECT_EQ(r.file_bytes(), 1024 + 2 * tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) ASSERT_EQ(r.token(static_cast<int64_t>(i)), tokens[i]);
  std::vector<int32_t> out(100);
  r.copy_tokens(4000, 100, out.data());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(out[i], static_cast<int32_t>(tokens[4000 + i]));
}

TEST(ShardTest, RoundTripUint32) {
  TempDir dir;
  std::vector<uint32_t> tokens = {0, 1, 65535, 65536, 100000, 50257, (1u << 31) - 1};
  ASSERT_EQ(narrowest_token_width(tokens), TokenWidth::kUint32);
  const std::string path = dir.file("b.bin");
  write_shard(path, tokens, TokenWidth::kUint32);
  ShardReader r(path);
  EXPECT_EQ(r.header().magic, kShardMagicUint32);
  EXPECT_EQ(r.header().version, kShardVersionUint32);
  EXPECT_EQ(r.width(), TokenWidth::kUint32);
  EXPECT_EQ(r.file_bytes(), 1024 + 4 * tokens.size());
  std::vector<int32_t> out(tokens.size());
  r.copy_tokens(0, static_cast<int64_t>(tokens.size()), out.data());
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(r.token(static_cast<int64_t>(i)), tokens[i]);
    EXPECT_EQ(static_cast<uint32_t>(out[i]), tokens[i]);
  }
}

TEST(ShardTest, ByteLayoutIsLlmcLittleEndian) {
  TempDir dir;
  const std::string path = dir.file("c.bin");
  write_shard(path, {0x0102, 0xA0B0}, TokenWidth::kUint16);
  const std::string bytes = tt::test::read_file(path);
  ASSERT_EQ(bytes.size(), 1024u + 4u);
  int32_t h[kShardHeaderInts];
  std::memcpy(h, bytes.data(), sizeof(h));
  EXPECT_EQ(h[0], 20240520);
  EXPECT_EQ(h[1], 1);
  EXPECT_EQ(h[2], 2);
  for (int i = 3; i < kShardHeaderInts; ++i) EXPECT_EQ(h[i], 0);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1024]), 0x02);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1025]), 0x01);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1026]), 0xB0);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1027]), 0xA0);
}

TEST(ShardTest, EmptyShardAndOverwriteLeaveNoTempFiles) {
  TempDir dir;
  const std::string path = dir.file("e.bin");
  write_shard(path, {}, TokenWidth::kUint16);
  EXPECT_EQ(ShardReader(path).num_tokens(), 0);
  write_shard(path, {1, 2, 3}, TokenWidth::kUint32);
  EXPECT_EQ(ShardReader(path).num_tokens(), 3);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "e.bin");
  }
  EXPECT_EQ(files, 1);
}

TEST(ShardTest, Uint16WriteRejectsWideIdAndKeepsOldFile) {
  TempDir dir;
  const std::string path = dir.file("w.bin");
  write_shard(path, {7, 8}, TokenWidth::kUint16);
  std::string msg = error_of([&] { write_shard(path, {1, 70000}, TokenWidth::kUint16); }, ErrorKind::kData);
  EXPECT_NE(msg.find("70000"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  ShardReader r(path);
  EXPECT_EQ(r.num_tokens(), 2);
  EXPECT_EQ(r.token(1), 8u);
}

TEST(ShardTest, WriteIntoMissingDirectoryFails) {
  TempDir dir;
  std::string msg =
      error_of([&] { write_shard(dir.file("nope/x.bin"), {1}, TokenWidth::kUint16); }, ErrorKind::kRuntime);
  EXPECT_NE(msg.find("nope/x.bin"), std::string::npos) << msg;
}

TEST(ShardTest, TruncatedFileNamesPathAndSizes) {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  std::vector<uint32_t> tokens(100, 5);
  write_shard(path, tokens, TokenWidth::kUint16);
  ::truncate(path.c_str(), 1024 + 190);
  std::string msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1224"), std::string::npos) << msg;  // expected bytes
  EXPECT_NE(msg.find("1214"), std::string::npos) << msg;  // actual bytes
  EXPECT_NE(msg.find("re-run the data prep"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cut short"), std::string::npos) << msg;
}

TEST(ShardTest, TrailingBytesRejected) {
  TempDir dir;
  const std::string path = dir.file("long.bin");
  write_raw_shard(path, kShardMagicUint32, kShardVersionUint32, 3, 13);
  std::string msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("1036"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 trailing"), std::string::npos) << msg;
}

TEST(ShardTest, BadMagicListsAcceptedMagics) {
  TempDir dir;
  const std::string path = dir.file("m.bin");
  write_raw_shard(path, 12345, 1, 0, 0);
  std::string msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("12345"), std::string::npos) << msg;
  EXPECT_NE(msg.find("20240520"), std::string::npos) << msg;
  EXPECT_NE(msg.find("20240801"), std::string::npos) << msg;
}

TEST(ShardTest, ModelFileMagicGetsSpecificHint) {
  TempDir dir;
  const std::string path = dir.file("gpt2_124M.bin");
  write_raw_shard(path, 20240326, 3, 1024, 0);
  std::string msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find("model file"), std::string::npos) << msg;
}

TEST(ShardTest, BadVersionForMagic) {
  TempDir dir;
  const std::string path = dir.file("v.bin");
  write_raw_shard(path, kShardMagicUint16, 7, 0, 0);  // the uint32 version with the uint16 magic
  std::string msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("version 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 1"), std::string::npos) << msg;
  write_raw_shard(path, kShardMagicUint32, 1, 0, 0);
  msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find("expected 7"), std::string::npos) << msg;
}

TEST(ShardTest, NegativeCountRejected) {
  TempDir dir;
  const std::string path = dir.file("n.bin");
  write_raw_shard(path, kShardMagicUint16, 1, -5, 0);
  std::string msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find("negative"), std::string::npos) << msg;
}

TEST(ShardTest, FileShorterThanHeader) {
  TempDir dir;
  const std::string path = dir.file("short.bin");
  tt::test::write_file(path, std::string(100, 'x'));
  std::string msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("100 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("shorter than"), std::string::npos) << msg;
  tt::test::write_file(path, "");
  msg = error_of([&] { ShardReader r(path); }, ErrorKind::kData);
  EXPECT_NE(msg.find("0 bytes"), std::string::npos) << msg;
}

TEST(ShardTest, MissingFileAndDirectory) {
  TempDir dir;
  std::string msg = error_of([&] { ShardReader r(dir.file("absent.bin")); }, ErrorKind::kData);
  EXPECT_NE(msg.find("absent.bin"), std::string::npos) << msg;
  msg = error_of([&] { ShardReader r(dir.path()); }, ErrorKind::kData);
  EXPECT_NE(msg.find(dir.path()), std::string::npos) << msg;
}

TEST(ShardTest, Uint32IdBeyondInt32IsDataError) {
  TempDir dir;
  const std::string path = dir.file("big.bin");
  write_shard(path, {1, 0x80000000u}, TokenWidth::kUint32);
  ShardReader r(path);
  EXPECT_EQ(r.token(1), 0x80000000u);
  int32_t out[2];
  std::string msg = error_of([&] { r.copy_tokens(0, 2, out); }, ErrorKind::kData);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST(ShardTest, ReaderIsMovable) {
  TempDir dir;
  const std::string path = dir.file("mv.bin");
  write_shard(path, {4, 5, 6}, TokenWidth::kUint16);
  std::vector<ShardReader> readers;
  readers.emplace_back(path);
  readers.emplace_back(path);
  ShardReader moved = std::move(readers[0]);
  EXPECT_EQ(moved.token(2), 6u);
  EXPECT_EQ(readers[1].token(0), 4u);
}

TEST(ResolveShardsTest, FileDirectoryGlob) {
  TempDir dir;
  for (const char* name : {"train_002.bin", "train_000.bin", "val_000.bin", "train_001.bin"})
    write_shard(dir.file(name), {1, 2}, TokenWidth::kUint16);
  tt::test::write_file(dir.file("notes.txt"), "x");
  std::filesystem::create_directory(dir.file("sub.bin"));  // a directory named *.bin is skipped

  EXPECT_EQ(resolve_shards(dir.file("val_000.bin")), std::vector<std::string>{dir.file("val_000.bin")});

  const std::vector<std::string> all = {dir.file("train_000.bin"), dir.file("train_001.bin"), dir.file("train_002.bin"),
                                        dir.file("val_000.bin")};
  EXPECT_EQ(resolve_shards(dir.path()), all);
  EXPECT_EQ(resolve_shards(dir.path() + "/"), all);

  const std::vector<std::string> train = {dir.file("train_000.bin"), dir.file("train_001.bin"),
                                          dir.file("train_002.bin")};
  EXPECT_EQ(resolve_shards(dir.file("train_*.bin")), train);
  EXPECT_EQ(resolve_shards(dir.file("train_00[02].bin")),
            (std::vector<std::string>{dir.file("train_000.bin"), dir.file("train_002.bin")}));
}

TEST(ResolveShardsTest, NothingMatchesNamesTheSpec) {
  TempDir dir;
  const std::string pattern = dir.file("fineweb_*.bin");
  std::string msg = error_of([&] { resolve_shards(pattern); }, ErrorKind::kData);
  EXPECT_NE(msg.find(pattern), std::string::npos) << msg;
  msg = error_of([&] { resolve_shards(dir.path()); }, ErrorKind::kData);  // empty directory
  EXPECT_NE(msg.find(dir.path()), std::string::npos) << msg;
  EXPECT_NE(msg.find("*.bin"), std::string::npos) << msg;
  msg = error_of([&] { resolve_shards(dir.file("missing.bin")); }, ErrorKind::kData);
  EXPECT_NE(msg.find("missing.bin"), std::string::npos) << msg;
  error_of([&] { resolve_shards(""); }, ErrorKind::kData);
}

}  // namespace
}  // namespace tt::data
