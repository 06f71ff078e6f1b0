// Damaged inputs through the real CLI: every command that reads a kind of file is given truncated,
// garbage and subtly corrupted versions of it, and must exit with the README's code for that kind
// (2 config or topology, 3 data or tokenizer, 4 checkpoint), name the file, and write nothing.
//
// Design: one table per kind of file, every damaged variant crossed with every command that reads
// it, so a new reader that forgets to validate (or reports the wrong kind) fails here by name. The
// damage is deterministic (fixed bytes, fixed offsets): a failure reproduces exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/checkpoint_io.h"
#include "tests/test_util.h"

namespace tt::test {
namespace {

namespace fs = std::filesystem;

// Deterministic junk: bytes of a fixed LCG (no magic, no structure).
std::string junk(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (char& c : s) c = char((x = x * 1103515245u + 12345u) >> 24);
  return s;
}

std::string cut(const std::string& content, size_t keep) { return content.substr(0, keep); }

std::string with_byte(std::string content, size_t at, char c) {
  content[at] = c;
  return content;
}

std::string flip(std::string content, size_t at) {
  content[at] = char(content[at] ^ 0x5a);
  return content;
}

struct Damaged {
  std::string name, content;
};

// Runs `topotrain <args>` expecting `code` and a message naming `file` (by its file name).
void expect_rejected(const std::string& args, int code, const std::string& file, const std::string& label) {
  const auto r = run_topotrain(args + " < /dev/null");
  EXPECT_EQ(r.exit_code, code) << label << ": topotrain " << args << "\n" << r.output;
  const std::string name = fs::path(file).filename().string();
  EXPECT_NE(r.output.find(name), std::string::npos) << label << ": the error must name " << name << "\n" << r.output;
}

// Writes each variant as dir/<name>; returns the paths in order.
std::vector<std::string> write_all(const TempDir& dir, const std::vector<Damaged>& variants) {
  std::vector<std::string> paths;
  for (const auto& v : variants) {
    write_file(dir.file(v.name), v.content);
    paths.push_back(dir.file(v.name));
  }
  return paths;
}

class CorruptInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto r = run_topotrain("data synth --out " + dir_.file("data") +
                                 " --vocab 16 --order 2 --concentration 30 --seed 3 --train-tokens 20000 "
                                 "--val-tokens 5000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::string config() const { return source_dir() + "/examples/gpt2-tiny-synth.pbtxt"; }
  // `train` on the tiny config with the given shards, 2 steps, into dir_/<run>.
  std::string train_args(const std::string& train, const std::string& val, const std::string& run = "run") const {
    return "train --config " + config() + " --set data.train=" + train + " --set data.val=" + val +
           " --set logging.run_dir=" + dir_.file(run) +
           " --set model.vocab_size=16 --set train.threads=1 --set train.device=cpu --set train.steps=2" +
           " --set checkpoint.every=0 --set optimizer.warmup_steps=1 --set train.sample_at_end=false";
  }

  TempDir dir_;
};

TEST_F(CorruptInputs, DamagedShardsExit3NamingTheShard) {
  const std::string good = read_file(dir_.file("data/train.bin"));
  const std::string val = dir_.file("data/val.bin");
  const auto shards = write_all(dir_, {
                                          {"cut_tail.bin", cut(good, good.size() - 10)},
                                          {"header_only.bin", cut(good, 1024)},
                                          {"cut_header.bin", cut(good, 100)},
                                          {"bad_magic.bin", with_byte(good, 0, 'X')},
                                          {"bad_version.bin", with_byte(good, 4, char(99))},
                                          {"garbage.bin", junk(4096)},
                                          {"empty.bin", ""},
                                      });
  const std::string model = source_dir() + "/tests/fixtures/models/gpt2-tiny";
  for (const auto& shard : shards) {
    expect_rejected("data inspect " + shard, 3, shard, "data inspect");
    expect_rejected(train_args(shard, val), 3, shard, "train (train shard)");
    expect_rejected(train_args(dir_.file("data/train.bin"), shard), 3, shard, "train (val shard)");
    expect_rejected("eval --model " + model + " --data " + shard + " --batches 1 --seq-len 8 --threads 1", 3, shard,
                    "eval");
  }
  EXPECT_FALSE(fs::exists(dir_.file("run/checkpoints"))) << "a run on bad data must not write checkpoints";
}

TEST_F(CorruptInputs, DamagedCheckpointsExit4NamingTheCheckpoint) {
  const auto trained = run_topotrain(train_args(dir_.file("data/train.bin"), dir_.file("data/val.bin"), "good"));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string good = read_file(checkpoint_path(dir_.file("good/checkpoints"), 2));
  ASSERT_GT(good.size(), 10000u);
  const auto ckpts = write_all(dir_, {
                                         {"cut_half.ckpt", cut(good, good.size() / 2)},
                                         {"cut_footer.ckpt", cut(good, good.size() - 5)},
                                         {"flipped_data.ckpt", flip(good, good.size() / 2)},
                                         {"flipped_header.ckpt", flip(good, 13)},
                                         {"bad_magic.ckpt", with_byte(good, 0, 'X')},
                                         {"garbage.ckpt", junk(4096)},
                                         {"empty.ckpt", ""},
                                     });
  const std::string val = dir_.file("data/val.bin");
  for (const auto& ckpt : ckpts) {
    const std::string name = fs::path(ckpt).stem().string();
    expect_rejected("sample --checkpoint " + ckpt + " --prompt ab --tokens 3 --threads 1", 4, ckpt, "sample");
    expect_rejected("eval --model " + ckpt + " --data " + val + " --batches 1 --threads 1", 4, ckpt, "eval");
    const std::string out = dir_.file("export_" + name);
    expect_rejected("export --checkpoint " + ckpt + " --format llmc --out " + out, 4, ckpt, "export");
    EXPECT_FALSE(fs::exists(out)) << "export of a damaged checkpoint wrote " << out;
    // The only checkpoint of a run: --resume finds none it can use, and says which it skipped.
    const std::string run = dir_.file("resume_" + name);
    fs::create_directories(run + "/checkpoints");
    const std::string in_run = checkpoint_path(run + "/checkpoints", 2);
    fs::copy_file(ckpt, in_run);
    const auto r = run_topotrain(train_args(dir_.file("data/train.bin"), val, "resume_" + name) + " --resume");
    EXPECT_EQ(r.exit_code, 4) << "train --resume with only " << name << "\n" << r.output;
    EXPECT_NE(r.output.find("skipping checkpoint " + in_run), std::string::npos) << r.output;
    EXPECT_EQ(read_file(in_run), read_file(ckpt)) << "the damaged checkpoint was modified";
  }
}

TEST_F(CorruptInputs, GarbageConfigsAndTopologiesExit2NamingTheFile) {
  const std::string good = read_file(config());
  const auto configs = write_all(dir_, {
                                           {"garbage.pbtxt", junk(2048)},
                                           {"cut.pbtxt", cut(good, good.find("n_embd"))},
                                           {"unbalanced.pbtxt", good + "\n}\n"},
                                           {"json_instead.pbtxt", "{\"model\": {\"n_layer\": 2}}"},
                                           {"empty.pbtxt", ""},
                                       });
  for (const auto& cfg : configs) {
    expect_rejected("train --config " + cfg + " --set train.device=cpu", 2, cfg, "train");
    expect_rejected("plan --config " + cfg + " --preset 8x4090-pcie", 2, cfg, "plan");
  }

  const std::string dump = dir_.file("good.topo");
  const auto probe = run_topotrain("probe --preset 8x4090-pcie --dump " + dump);
  ASSERT_EQ(probe.exit_code, 0) << probe.output;
  const std::string topo = read_file(dump);
  ASSERT_GT(topo.size(), 100u);
  const auto topologies = write_all(dir_, {
                                              {"garbage.topo", junk(2048)},
                                              {"cut.topo", cut(topo, topo.size() / 2)},
                                              {"bad_field.topo", "no_such_field: 3\n" + topo},
                                              {"bad_json.json", "{\"nodes\": \"eight\"}"},
                                              {"cut_json.json", "{\"nodes\": [{"},
                                              {"empty.topo", ""},
                                          });
  for (const auto& t : topologies) {
    expect_rejected("plan --config " + config() + " --topology " + t, 2, t, "plan --topology");
    expect_rejected("probe --topology " + t, 2, t, "probe --topology");
  }
}

TEST_F(CorruptInputs, GarbageTokenizerExits3NamingEncoderJson) {
  const std::string text = dir_.file("text.txt");
  std::string words;
  for (int i = 0; i < 300; ++i) words += "the quick brown fox " + std::to_string(i % 17) + " jumps over the lazy dog\n";
  write_file(text, words);
  const std::string good_dir = dir_.file("tok");
  const auto trained = run_topotrain("data train-tokenizer --input " + text + " --vocab-size 300 --out " + good_dir);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string encoder = read_file(good_dir + "/encoder.json");
  const std::vector<Damaged> variants = {
      {"garbage", junk(4096)}, {"cut", cut(encoder, encoder.size() / 2)},
      {"array", "[1, 2, 3]"},  {"wrong_type", "{\"a\": \"one\"}"},
      {"empty", ""},
  };
  for (const auto& v : variants) {
    const std::string tok = dir_.file("tok_" + v.name);
    fs::create_directories(tok);
    fs::copy_file(good_dir + "/vocab.bpe", tok + "/vocab.bpe");
    write_file(tok + "/encoder.json", v.content);
    const std::string label = "encoder.json " + v.name;
    const std::string out = dir_.file("encoded_" + v.name);
    expect_rejected("data tokenize --tokenizer " + tok, 3, "encoder.json", label + ": data tokenize");
    expect_rejected("data inspect " + dir_.file("data/val.bin") + " --tokenizer " + tok, 3, "encoder.json",
                    label + ": data inspect");
    expect_rejected("data encode --tokenizer " + tok + " --input " + text + " --out " + out, 3, "encoder.json",
                    label + ": data encode");
    EXPECT_FALSE(fs::exists(out)) << label << ": data encode wrote " << out;
  }
}

}  // namespace
}  // namespace tt::test
