// safetensors files: what the writer writes the reader reads back (F32 exactly, BF16/F16 rounded
// once), element ranges, and every damaged file a kCheckpoint error naming the file and tensor:
// truncated, header past the end, overlapping or out-of-file offsets, shape against span, unknown
// and unreadable dtypes.
#include "core/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/test_util.h"

namespace tt {
namespace {

// A file from a raw JSON header and data bytes.
void write_raw(const std::string& path, const std::string& header, const std::vector<uint8_t>& data) {
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header;
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
}

// The kCheckpoint error opening `path` gives ("" when it opens).
std::string open_error(const std::string& path) {
  try {
    SafetensorsFile f(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCheckpoint) << e.what();
    return e.where() + ": " + e.problem();
  }
  return "";
}

TEST(Safetensors, WriterOutputReadsBackInEveryDtype) {
  test::TempDir dir;
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.37f - 100.0f;
  SafetensorsWriter w;
  auto fill = [&](int64_t first, int64_t count, float* out) {
    std::memcpy(out, values.data() + first, size_t(count) * 4);
  };
  w.add("a.weight", DType::kF32, {40, 25}, fill);
  w.add("b.weight", DType::kBF16, {1000}, fill);
  w.add("c.bias", DType::kF16, {10, 100}, fill);
  w.set_metadata("format", "pt");
  w.write(dir.file("m.safetensors"));

  SafetensorsFile f(dir.file("m.safetensors"));
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a.weight", "b.weight", "c.bias"}));
  EXPECT_EQ(f.info("a.weight").shape, (Shape{40, 25}));
  EXPECT_EQ(f.info("b.weight").dtype_name, "BF16");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  std::vector<float> back(1000);
  f.read_f32("a.weight", 0, 1000, back.data());
  EXPECT_EQ(back, values);
  f.read_f32("b.weight", 0, 1000, back.data());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(back[i], bf16_to_f32(f32_to_bf16(values[i]))) << i;
  f.read_f32("c.bias", 990, 10, back.data());  // a range at the end
  for (size_t i = 0; i < 10; ++i) ASSERT_EQ(back[i], f16_to_f32(f32_to_f16(values[990 + i]))) << i;
  f.release("a.weight");
  f.read_f32("a.weight", 7, 3, back.data());  // released pages come back from the file
  EXPECT_EQ(back[0], values[7]);
  try {
    f.info("missing.weight");
    FAIL() << "a missing tensor must be named";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.weight"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, DamagedFilesNameTheFileAndTensor) {
  test::TempDir dir;
  const std::vector<uint8_t> data(16, 0);
  auto at = [&](const std::string& name) { return dir.file(name); };

  write_raw(
      at("overlap"),
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      data);
  std::string e = open_error(at("overlap"));
  EXPECT_NE(e.find("overlap"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor 'y'"), std::string::npos) << e;

  write_raw(at("past_end"), R"({"x":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", data);
  e = open_error(at("past_end"));
  EXPECT_NE(e.find("run past"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor 'x'"), std::string::npos) << e;

  write_raw(at("span"), R"({"x":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", data);
  e = open_error(at("span"));
  EXPECT_NE(e.find("needs 6 bytes"), std::string::npos) << e;

  write_raw(at("dtype"), R"({"x":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", data);
  e = open_error(at("dtype"));
  EXPECT_NE(e.find("unknown dtype 'Q4'"), std::string::npos) << e;

  write_raw(at("json"), "{not json", data);
  EXPECT_NE(open_error(at("json")).find("not valid JSON"), std::string::npos);

  // A header length past the end of the file (a truncated download).
  {
    std::ofstream f(at("truncated"), std::ios::binary);
    const uint64_t n = 4000;
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << R"({"x":)";
  }
  EXPECT_NE(open_error(at("truncated")).find("runs past the end"), std::string::npos);
  EXPECT_NE(open_error(at("no_such_file")).find("cannot open"), std::string::npos);

  // Integer buffers are listed but are not weights: reading one says which dtypes are.
  write_raw(at("ints"), R"({"steps":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", data);
  SafetensorsFile ints(at("ints"));
  EXPECT_FALSE(ints.info("steps").readable);
  float out[2];
  try {
    ints.read_f32("steps", 0, 2, out);
    FAIL() << "I64 must not read as weights";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("F32, BF16 and F16"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("steps"), std::string::npos) << err.what();
  }
}

// Found by tests/fuzz (safetensors): a shape whose element count overflows int64 (here 2^64, which
// wraps to 0 and so matched an empty span) is refused, not read.
TEST(Safetensors, ShapeWhoseElementCountOverflowsIsDamage) {
  test::TempDir dir;
  const std::vector<uint8_t> data(16, 0);
  write_raw(dir.file("wrap"), R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", data);
  std::string e = open_error(dir.file("wrap"));
  EXPECT_NE(e.find("more elements than the file has bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor 'x'"), std::string::npos) << e;
  write_raw(dir.file("big"), R"({"x":{"dtype":"F32","shape":[1000000,1000000],"data_offsets":[0,16]}})", data);
  EXPECT_NE(open_error(dir.file("big")).find("more elements"), std::string::npos);
}

}  // namespace
}  // namespace tt
