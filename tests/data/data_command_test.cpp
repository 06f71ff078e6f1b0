// Tests for launch/data_command.h (`topotrain data synth|inspect`), called in-process.
#include "launch/data_command.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data/shard.h"
#include "data/synth.h"
#include "tests/data/data_cli_runner.h"
#include "tests/test_util.h"

namespace tt {
namespace {

using tt::test::TempDir;

using test::data_error_kind;
using test::DataCommandRun;
using test::run_data;

TEST(DataCommandTest, SynthThenInspect) {
  TempDir dir;
  const std::string out = dir.file("synth");
  DataCommandRun r = run_data({"synth", "--out", out, "--vocab", "16", "--order=2", "--seed", "3", "--concentration",
                               "6", "--train-tokens", "5000", "--val-tokens=1000"});
  EXPECT_EQ(r.rc, 0);
  data::SynthManifest m = data::read_synth_manifest(out + "/synth.json");
  EXPECT_EQ(m.vocab, 16);
  EXPECT_EQ(m.seed, 3u);
  EXPECT_NE(r.out.find("entropy rate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(tt::str("T=256")), std::string::npos) << r.out;
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.6f", m.entropy_rate_nats);
  EXPECT_NE(r.out.find(rate), std::string::npos) << r.out;
  EXPECT_EQ(data::ShardReader(out + "/train.bin").num_tokens(), 5000);
  EXPECT_EQ(data::ShardReader(out + "/val.bin").num_tokens(), 1000);

  DataCommandRun in = run_data({"inspect", out});
  EXPECT_EQ(in.rc, 0);
  EXPECT_NE(in.out.find("train.bin"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("val.bin"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("20240520"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("uint16"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("tokens 5000"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("text: \""), std::string::npos) << in.out;

  DataCommandRun one = run_data({"inspect", out + "/val.bin"});
  EXPECT_NE(one.out.find("tokens 1000"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("train.bin"), std::string::npos) << one.out;
}

TEST(DataCommandTest, InspectUint32ShardWithoutManifest) {
  TempDir dir;
  data::write_shard(dir.file("x.bin"), {70000, 3, 9}, data::TokenWidth::kUint32);
  DataCommandRun r = run_data({"inspect", dir.file("x.bin")});
  EXPECT_NE(r.out.find("20240801"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("min 3, max 70000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first tokens: 70000 3 9"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("text:"), std::string::npos) << r.out;
}

TEST(DataCommandTest, HelpAndUsageErrors) {
  EXPECT_NE(run_data({"--help"}).out.find("synth"), std::string::npos);
  EXPECT_NE(run_data({"synth", "--help"}).out.find("--concentration"), std::string::npos);
  EXPECT_NE(run_data({"inspect", "--help"}).out.find("FILE|DIR"), std::string::npos);
  EXPECT_EQ(data_error_kind({}), ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind({"frobnicate"}), ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind({"synth"}), ErrorKind::kUsage);  // missing --out
  EXPECT_EQ(data_error_kind({"synth", "--out", "/tmp/x", "--vocab", "abc"}), ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind({"synth", "--out", "/tmp/x", "--vocab", "500"}), ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind({"synth", "--out", "/tmp/x", "--bogus", "1"}), ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind({"synth", "--out"}), ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind({"inspect"}), ErrorKind::kUsage);
  TempDir dir;
  EXPECT_EQ(data_error_kind({"inspect", dir.file("none_*.bin")}), ErrorKind::kData);
  test::write_file(dir.file("bad.bin"), std::string(10, 'x'));
  EXPECT_EQ(data_error_kind({"inspect", dir.file("bad.bin")}), ErrorKind::kData);
}

}  // namespace
}  // namespace tt
