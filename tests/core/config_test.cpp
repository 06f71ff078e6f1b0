// Config loading: the examples parse and validate, and every kind of user mistake produces a
// kConfig error naming the file (line:column where the text is at fault), the dotted field and a hint.
#include "core/config.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "tests/test_util.h"

namespace tt {
namespace {

// A minimal valid config; line numbers matter to the tests below.
const std::string kBase =
    "model {\n"                    // 1
    "  n_layer: 2\n"               // 2
    "  n_head: 4\n"                // 3
    "  n_embd: 64\n"               // 4
    "  vocab_size: 32\n"           // 5
    "  max_seq_len: 64\n"          // 6
    "}\n"                          // 7
    "train {\n"                    // 8
    "  batch_size: 2\n"            // 9
    "  seq_len: 16\n"              // 10
    "  steps: 10\n"                // 11
    "}\n"                          // 12
    "data { train: \"t.bin\" }\n"  // 13
    "optimizer { lr: 0.001 }\n";   // 14

// kBase with the first occurrence of `from` replaced by `to`.
std::string base_with(const std::string& from, const std::string& to) {
  std::string s = kBase;
  size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

// Runs `f`, expects a kConfig tt::Error and returns its full message.
std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a config error";
  return "";
}

std::string parse_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return config_error([&] { parse_config_text(text, "test.pbtxt", overrides); });
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// ---- examples ---------------------------------------------------------------------------------

TEST(Config, ExamplesParseAndValidate) {
  const std::filesystem::path dir = std::filesystem::path(test::source_dir()) / "examples";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".pbtxt") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_config(entry.path().string()));
    ++count;
  }
  EXPECT_GE(count, 2);
}

TEST(Config, QuickstartExampleValues) {
  config::Config cfg = load_config(test::source_dir() + "/examples/gpt2-tiny-synth.pbtxt");
  EXPECT_EQ(cfg.data().train(), "runs/quickstart/data/train.bin");
  EXPECT_EQ(cfg.data().val(), "runs/quickstart/data/val.bin");
  EXPECT_EQ(cfg.logging().run_dir(), "runs/quickstart");
  EXPECT_EQ(cfg.model().arch(), "gpt2");
}

TEST(Config, Gpt2_124mExampleValues) {
  config::Config cfg = load_config(test::source_dir() + "/examples/gpt2-124m.pbtxt");
  EXPECT_EQ(cfg.model().n_layer(), 12);
  EXPECT_EQ(cfg.model().n_head(), 12);
  EXPECT_EQ(cfg.model().n_embd(), 768);
  EXPECT_EQ(cfg.model().vocab_size(), 50257);
  EXPECT_EQ(cfg.model().max_seq_len(), 1024);
  EXPECT_FLOAT_EQ(cfg.optimizer().lr(), 6e-4f);
  EXPECT_EQ(cfg.optimizer().warmup_steps(), 700);
  EXPECT_EQ(cfg.data().train(), "data/fineweb10B/fineweb_train_*.bin");
}

TEST(Config, TextRoundTrip) {
  for (const char* name : {"gpt2-tiny-synth.pbtxt", "gpt2-124m.pbtxt"}) {
    SCOPED_TRACE(name);
    config::Config cfg = load_config(test::source_dir() + "/examples/" + name);
    const std::string text = config_to_text(cfg);
    config::Config again = parse_config_text(text, "round-trip");
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(cfg, again)) << text;
    EXPECT_EQ(config_to_text(again), text);
  }
}

TEST(Config, LoadConfigAppliesOverrides) {
  config::Config cfg = load_config(test::source_dir() + "/examples/gpt2-tiny-synth.pbtxt",
                                   {"train.steps=70", "train.steps=90", "optimizer.lr=0.01"});
  EXPECT_EQ(cfg.train().steps(), 90);  // in order: the last one wins
  EXPECT_FLOAT_EQ(cfg.optimizer().lr(), 0.01f);
}

TEST(Config, MissingFile) {
  std::string msg = config_error([] { load_config("/nonexistent/dir/cfg.pbtxt"); });
  EXPECT_HAS(msg, "/nonexistent/dir/cfg.pbtxt");
  EXPECT_HAS(msg, "not found");
  test::TempDir dir;
  msg = config_error([&] { load_config(dir.path()); });
  EXPECT_HAS(msg, "not a regular file");
}

TEST(Config, LoadConfigReportsThePath) {
  test::TempDir dir;
  const std::string path = dir.file("bad.pbtxt");
  test::write_file(path, base_with("n_layer: 2", "n_layers: 2"));
  const std::string msg = config_error([&] { load_config(path); });
  EXPECT_HAS(msg, path + ":2:3:");
}

// ---- defaults ---------------------------------------------------------------------------------

TEST(Config, DefaultsFilled) {
  config::Config cfg = parse_config_text(kBase, "test.pbtxt");
  EXPECT_EQ(cfg.model().arch(), "gpt2");
  EXPECT_FLOAT_EQ(cfg.model().init_std(), 0.02f);
  EXPECT_EQ(cfg.train().grad_accum_steps(), 1);
  EXPECT_EQ(cfg.train().val_batches(), 8);
  EXPECT_EQ(cfg.train().log_every(), 10);
  EXPECT_EQ(cfg.train().seed(), 1337u);
  EXPECT_EQ(cfg.train().threads(), 0);
  EXPECT_FALSE(cfg.train().sample_at_end());
  EXPECT_FLOAT_EQ(cfg.optimizer().beta1(), 0.9f);
  EXPECT_FLOAT_EQ(cfg.optimizer().beta2(), 0.95f);
  EXPECT_FLOAT_EQ(cfg.optimizer().eps(), 1e-8f);
  EXPECT_FLOAT_EQ(cfg.optimizer().min_lr_ratio(), 0.0f);
  EXPECT_FLOAT_EQ(cfg.optimizer().grad_clip(), 1.0f);
  EXPECT_FLOAT_EQ(cfg.optimizer().weight_decay(), 0.0f);
  EXPECT_EQ(cfg.optimizer().warmup_steps(), 0);
  EXPECT_EQ(cfg.logging().run_dir(), "runs/default");
  EXPECT_EQ(cfg.checkpoint().every(), 0);
  EXPECT_EQ(cfg.checkpoint().keep(), 0);
}

TEST(Config, FillDefaultsIsIdempotentAndKeepsSetValues) {
  config::Config cfg;
  cfg.mutable_optimizer()->set_beta2(0.99f);
  fill_defaults(cfg);
  fill_defaults(cfg);
  EXPECT_FLOAT_EQ(cfg.optimizer().beta2(), 0.99f);
  EXPECT_FLOAT_EQ(cfg.optimizer().beta1(), 0.9f);
}

TEST(Config, ExplicitZeroIsRespected) {
  std::string text = base_with("optimizer { lr: 0.001 }", "optimizer { lr: 0.001 grad_clip: 0 beta1: 0 }");
  text = text.replace(text.find("steps: 10"), 9, "steps: 10 seed: 0 log_every: 0");
  config::Config cfg = parse_config_text(text, "test.pbtxt");
  EXPECT_EQ(cfg.optimizer().grad_clip(), 0.0f);  // clipping off, not the default 1.0
  EXPECT_EQ(cfg.optimizer().beta1(), 0.0f);
  EXPECT_EQ(cfg.train().seed(), 0u);
  EXPECT_EQ(cfg.train().log_every(), 0);
  // The same through --set.
  cfg = parse_config_text(kBase, "test.pbtxt", {"optimizer.grad_clip=0", "train.seed=0"});
  EXPECT_EQ(cfg.optimizer().grad_clip(), 0.0f);
  EXPECT_EQ(cfg.train().seed(), 0u);
}

TEST(Config, ExplicitZeroWhereZeroIsInvalid) {
  std::string msg = parse_error(base_with("  steps: 10\n", "  steps: 10\n  val_batches: 0\n"));
  EXPECT_HAS(msg, "test.pbtxt:12: train.val_batches must be > 0 (got 0)");
  msg = parse_error(base_with("  n_layer: 2\n", "  n_layer: 2\n  init_std: 0\n"));
  EXPECT_HAS(msg, "test.pbtxt:3: model.init_std must be a finite number > 0 (got 0)");
  msg = parse_error(base_with("}\ntrain", "  arch: \"\"\n}\ntrain"));
  EXPECT_HAS(msg, "model.arch \"\" is not supported");
}

// ---- parse errors -----------------------------------------------------------------------------

TEST(Config, UnknownFieldWithDidYouMean) {
  const std::string msg = parse_error(base_with("n_layer: 2", "n_layers: 2"));
  EXPECT_HAS(msg, "test.pbtxt:2:3: unknown field 'n_layers' in tt.config.ModelConfig");
  EXPECT_HAS(msg, "did you mean 'n_layer'?");
}

TEST(Config, UnknownFieldInTheWrongBlock) {
  const std::string msg = parse_error(base_with("  steps: 10\n", "  steps: 10\n  lr: 0.1\n"));
  EXPECT_HAS(msg, "test.pbtxt:12:3: unknown field 'lr' in tt.config.TrainConfig");
  EXPECT_HAS(msg, "did you mean 'optimizer.lr'?");
}

TEST(Config, UnknownBlock) {
  const std::string msg = parse_error("modle { n_layer: 2 }\n");
  EXPECT_HAS(msg, "test.pbtxt:1:1: unknown field 'modle' in tt.config.Config");
  EXPECT_HAS(msg, "did you mean 'model'?");
}

TEST(Config, UnknownFieldWithoutNearMatchListsTheFields) {
  const std::string msg = parse_error(base_with("n_layer: 2", "depth_of_model: 2"));
  EXPECT_HAS(msg, "unknown field 'depth_of_model'");
  EXPECT_HAS(msg, "the fields of model are: arch, n_layer, n_head");
}

TEST(Config, StringForInt) {
  const std::string msg = parse_error(base_with("n_head: 4", "n_head: \"four\""));
  EXPECT_HAS(msg, "test.pbtxt:3:11: bad value for model.n_head: expected a whole number (int32), got \"four\"");
  EXPECT_HAS(msg, "e.g. `n_head: 12`");
}

TEST(Config, FloatForInt) {
  const std::string msg = parse_error(base_with("steps: 10", "steps: 10.5"));
  EXPECT_HAS(msg, "test.pbtxt:11:");
  EXPECT_HAS(msg, "bad value for train.steps: expected a whole number (int32), got 10.5");
}

TEST(Config, IntForString) {
  const std::string msg = parse_error(base_with("train: \"t.bin\"", "train: 5"));
  EXPECT_HAS(msg, "test.pbtxt:13:");
  EXPECT_HAS(msg, "bad value for data.train: expected a string, got 5");
}

TEST(Config, BadBool) {
  const std::string msg = parse_error(base_with("  steps: 10\n", "  steps: 10\n  sample_at_end: maybe\n"));
  EXPECT_HAS(msg, "test.pbtxt:12:");
  EXPECT_HAS(msg, "train.sample_at_end: expected true or false, got \"maybe\"");
}

TEST(Config, IntegerOutOfRange) {
  const std::string msg = parse_error(base_with("steps: 10", "steps: 3000000000"));
  EXPECT_HAS(msg, "value 3000000000 is out of range for train.steps (int32)");
}

TEST(Config, NegativeUnsigned) {
  const std::string msg = parse_error(base_with("  steps: 10\n", "  steps: 10\n  seed: -1\n"));
  EXPECT_HAS(msg, "train.seed: expected a whole number >= 0 (uint64)");
}

TEST(Config, DuplicateField) {
  const std::string msg = parse_error(base_with("  n_head: 4\n", "  n_head: 4\n  n_head: 8\n"));
  EXPECT_HAS(msg, "test.pbtxt:4:3: model.n_head is set more than once");
}

TEST(Config, DuplicateBlock) {
  const std::string msg = parse_error(kBase + "train { seed: 3 }\n");
  EXPECT_HAS(msg, "test.pbtxt:15:1: train is set more than once");
  EXPECT_HAS(msg, "merge the train { } blocks into one");
}

TEST(Config, MissingClosingBrace) {
  const std::string msg = parse_error("model {\n  n_layer: 2\n");
  EXPECT_HAS(msg, "unexpected end of the text inside model { }");
  EXPECT_HAS(msg, "closing '}' missing");
}

TEST(Config, UnquotedString) {
  const std::string msg = parse_error(base_with("n_layer: 2", "n_layer: 2 arch: gpt2"));
  EXPECT_HAS(msg, "bad value for model.arch: expected a string, got gpt2");
  EXPECT_HAS(msg, "put text in double quotes: `arch: \"gpt2\"`");
}

TEST(Config, UnbalancedBrace) {
  const std::string msg = parse_error(kBase + "}\n");
  EXPECT_HAS(msg, "test.pbtxt:15:1: unexpected '}'");
}

TEST(Config, ValueForBlock) {
  const std::string msg = parse_error("model: 3\n");
  EXPECT_HAS(msg, "test.pbtxt:1:");
  EXPECT_HAS(msg, "model is a block, not a value");
}

TEST(Config, CommentsAreAllowed) {
  EXPECT_NO_THROW(parse_config_text("# header\n" + base_with("n_layer: 2", "n_layer: 2  # depth"), "t"));
}

// ---- validation -------------------------------------------------------------------------------

TEST(Config, EmbdNotDivisibleByHeads) {
  const std::string msg = parse_error(base_with("n_embd: 64", "n_embd: 66"));
  EXPECT_HAS(msg, "test.pbtxt:4: model.n_embd (66) must be divisible by model.n_head (4)");
  EXPECT_HAS(msg, "hint:");
}

TEST(Config, LrNotPositive) {
  std::string msg = parse_error(base_with("lr: 0.001", "lr: -0.1"));
  EXPECT_HAS(msg, "test.pbtxt:14: optimizer.lr must be a finite number > 0 (got -0.1)");
  msg = parse_error(base_with("lr: 0.001", "lr: 0"));
  EXPECT_HAS(msg, "optimizer.lr must be a finite number > 0 (got 0)");
  msg = parse_error(base_with("optimizer { lr: 0.001 }", ""));
  EXPECT_HAS(msg, "test.pbtxt: optimizer.lr is not set (must be > 0)");
  msg = parse_error(base_with("lr: 0.001", "lr: nan"));
  EXPECT_HAS(msg, "optimizer.lr must be a finite number > 0");
}

TEST(Config, BatchSizeZero) {
  const std::string msg = parse_error(base_with("batch_size: 2", "batch_size: 0"));
  EXPECT_HAS(msg, "test.pbtxt:9: train.batch_size must be > 0 (got 0)");
}

TEST(Config, SeqLenAboveMaxSeqLen) {
  const std::string msg = parse_error(base_with("seq_len: 16", "seq_len: 128"));
  EXPECT_HAS(msg, "test.pbtxt:10: train.seq_len (128) exceeds model.max_seq_len (64)");
  EXPECT_HAS(msg, "raise model.max_seq_len");
}

TEST(Config, OtherRanges) {
  struct Case {
    std::string from, to, expected;
  };
  const std::vector<Case> cases = {
      {"lr: 0.001", "lr: 0.001 beta1: 1", "optimizer.beta1 must be in [0, 1) (got 1)"},
      {"lr: 0.001", "lr: 0.001 beta2: -0.5", "optimizer.beta2 must be in [0, 1) (got -0.5)"},
      {"lr: 0.001", "lr: 0.001 eps: 0", "optimizer.eps must be a finite number > 0 (got 0)"},
      {"lr: 0.001", "lr: 0.001 min_lr_ratio: 1.5", "optimizer.min_lr_ratio must be in [0, 1] (got 1.5)"},
      {"lr: 0.001", "lr: 0.001 warmup_steps: 11", "optimizer.warmup_steps (11) exceeds train.steps (10)"},
      {"lr: 0.001", "lr: 0.001 warmup_steps: -1", "optimizer.warmup_steps must be >= 0 (got -1)"},
      {"lr: 0.001", "lr: 0.001 weight_decay: -0.1", "optimizer.weight_decay must be a finite number >= 0"},
      {"lr: 0.001", "lr: 0.001 grad_clip: -1", "optimizer.grad_clip must be a finite number >= 0"},
      {"steps: 10", "steps: 10 grad_accum_steps: 0", "train.grad_accum_steps must be >= 1 (got 0)"},
      {"steps: 10", "steps: -3", "train.steps must be > 0 (got -3)"},
      {"steps: 10", "steps: 10 val_every: -1", "train.val_every must be >= 0 (got -1)"},
      {"steps: 10", "steps: 10 log_every: -1", "train.log_every must be >= 0 (got -1)"},
      {"steps: 10", "steps: 10 threads: -2", "train.threads must be >= 0 (got -2)"},
      {"steps: 10", "steps: 10 val_batches: -2", "train.val_batches must be > 0 (got -2)"},
      {"n_layer: 2", "n_layer: 2 arch: \"mamba\"", "model.arch \"mamba\" is not supported"},
      {"n_layer: 2", "n_layer: 2 n_kv_head: 3", "model.n_head (4) must be a multiple of model.n_kv_head (3)"},
      {"n_layer: 2", "n_layer: 2 n_kv_head: -1", "model.n_kv_head must be >= 0 (got -1)"},
      {"n_layer: 2", "n_layer: 2 head_dim: -8", "model.head_dim must be >= 0 (got -8)"},
      {"n_layer: 2", "n_layer: 2 norm: \"batchnorm\"", "model.norm \"batchnorm\" is not supported"},
      {"n_layer: 2", "n_layer: 2 position: \"alibi\"", "model.position \"alibi\" is not supported"},
      {"n_layer: 2", "n_layer: 2 mlp: \"relu\"", "model.mlp \"relu\" is not supported"},
      {"n_layer: 2", "n_layer: 2 mlp_hidden: -4", "model.mlp_hidden must be >= 0 (got -4)"},
      {"n_layer: 2", "n_layer: 2 rope_theta: 0", "model.rope_theta must be a finite number > 0 (got 0)"},
      {"n_layer: 2", "n_layer: 2 norm_eps: -1", "model.norm_eps must be a finite number > 0 (got -1)"},
      {"n_layer: 2", "n_layer: 2 init_std: -1", "model.init_std must be a finite number > 0 (got -1)"},
      {"vocab_size: 32", "vocab_size: -1", "model.vocab_size must be > 0 (got -1)"},
      {"max_seq_len: 64", "max_seq_len: 0", "model.max_seq_len must be > 0 (got 0)"},
      {"data { train: \"t.bin\" }", "data { train: \"\" }", "data.train is not set"},
      {"data { train: \"t.bin\" }", "data { train: \"t.bin\" } checkpoint { every: -1 }",
       "checkpoint.every must be >= 0"},
      {"data { train: \"t.bin\" }", "data { train: \"t.bin\" } checkpoint { keep: -1 }",
       "checkpoint.keep must be >= 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    const std::string msg = parse_error(base_with(c.from, c.to));
    EXPECT_HAS(msg, c.expected);
    EXPECT_HAS(msg, "test.pbtxt");
    EXPECT_HAS(msg, "hint:");
  }
}

TEST(Config, MultipleProblemsReportedTogether) {
  std::string text = base_with("n_embd: 64", "n_embd: 66");
  text = text.substr(0, text.find("optimizer"));  // lr unset
  size_t pos = text.find("batch_size: 2");
  text.replace(pos, 13, "batch_size: 0");
  const std::string msg = parse_error(text);
  EXPECT_HAS(msg, "3 problems in the config:");
  EXPECT_HAS(msg, "\n  test.pbtxt:4: model.n_embd (66) must be divisible by model.n_head (4)");
  EXPECT_HAS(msg, "\n  test.pbtxt:9: train.batch_size must be > 0 (got 0)");
  EXPECT_HAS(msg, "\n  test.pbtxt: optimizer.lr is not set (must be > 0)");
}

TEST(Config, EmptyConfigListsEveryRequiredField) {
  const std::string msg = parse_error("");
  for (const char* field : {"model.n_layer", "model.n_head", "model.n_embd", "model.vocab_size", "model.max_seq_len",
                            "train.batch_size", "train.seq_len", "train.steps", "data.train", "optimizer.lr"})
    EXPECT_HAS(msg, std::string("\n  test.pbtxt: ") + field);
}

TEST(Config, ValidateConfigDirectly) {
  config::Config cfg = parse_config_text(kBase, "test.pbtxt");
  EXPECT_NO_THROW(validate_config(cfg, "built"));
  cfg.mutable_train()->set_batch_size(0);
  const std::string msg = config_error([&] { validate_config(cfg, "built"); });
  EXPECT_HAS(msg, "built: train.batch_size must be > 0 (got 0)");
}

// ---- overrides --------------------------------------------------------------------------------

TEST(Config, OverrideScalars) {
  config::Config cfg = parse_config_text(
      kBase, "test.pbtxt",
      {"train.steps=100", "optimizer.lr=3e-4", "data.val=some/dir/val_*.bin", "logging.run_dir=\"runs/with space\"",
       "train.sample_at_end=true", " model.n_layer = 4 ", "train.memory_budget_bytes=17179869184"});
  EXPECT_EQ(cfg.train().steps(), 100);
  EXPECT_FLOAT_EQ(cfg.optimizer().lr(), 3e-4f);
  EXPECT_EQ(cfg.data().val(), "some/dir/val_*.bin");
  EXPECT_EQ(cfg.logging().run_dir(), "runs/with space");
  EXPECT_TRUE(cfg.train().sample_at_end());
  EXPECT_EQ(cfg.model().n_layer(), 4);
  EXPECT_EQ(cfg.train().memory_budget_bytes(), 17179869184ull);
}

TEST(Config, OverrideValueMayContainEquals) {
  config::Config cfg = parse_config_text(kBase, "test.pbtxt", {"data.train=a=b.bin"});
  EXPECT_EQ(cfg.data().train(), "a=b.bin");
}

TEST(Config, ApplyOverrideDirectly) {
  config::Config cfg;
  apply_override(cfg, "checkpoint.keep=3", "");
  EXPECT_EQ(cfg.checkpoint().keep(), 3);
  apply_override(cfg, "train.sample_at_end=false", "");
  EXPECT_FALSE(cfg.train().sample_at_end());
}

TEST(Config, OverrideUnknownField) {
  std::string msg = parse_error(kBase, {"train.stepz=5"});
  EXPECT_HAS(msg, "test.pbtxt: --set train.stepz=5: unknown field 'stepz' in train");
  EXPECT_HAS(msg, "did you mean 'steps'?");
  msg = parse_error(kBase, {"trian.steps=5"});
  EXPECT_HAS(msg, "unknown field 'trian' at the top level of the config");
  EXPECT_HAS(msg, "did you mean 'train'?");
  msg = parse_error(kBase, {"train.lr=5"});
  EXPECT_HAS(msg, "did you mean 'optimizer.lr'?");
}

TEST(Config, OverrideBadType) {
  std::string msg = parse_error(kBase, {"train.steps=ten"});
  EXPECT_HAS(msg, "--set train.steps=ten: bad value 'ten' for train.steps: expected a whole number (int32)");
  msg = parse_error(kBase, {"train.steps=1.5"});
  EXPECT_HAS(msg, "bad value '1.5' for train.steps");
  msg = parse_error(kBase, {"optimizer.lr=fast"});
  EXPECT_HAS(msg, "bad value 'fast' for optimizer.lr: expected a number (float)");
  msg = parse_error(kBase, {"train.sample_at_end=yes"});
  EXPECT_HAS(msg, "bad value 'yes' for train.sample_at_end: expected true or false");
  msg = parse_error(kBase, {"train.steps="});
  EXPECT_HAS(msg, "bad value '' for train.steps");
  msg = parse_error(kBase, {"train.seed=-1"});
  EXPECT_HAS(msg, "expected a whole number >= 0 (uint64)");
  msg = parse_error(kBase, {"train.steps=5x"});
  EXPECT_HAS(msg, "bad value '5x' for train.steps");
}

TEST(Config, OverrideMalformed) {
  std::string msg = parse_error(kBase, {"train.steps"});
  EXPECT_HAS(msg, "--set train.steps: malformed assignment: expected FIELD=VALUE");
  msg = parse_error(kBase, {"=5"});
  EXPECT_HAS(msg, "malformed assignment: no field name before '='");
  msg = parse_error(kBase, {"train..steps=5"});
  EXPECT_HAS(msg, "malformed field path 'train..steps'");
  msg = parse_error(kBase, {"train.steps.x=5"});
  EXPECT_HAS(msg, "train.steps is a whole number (int32), not a block; it has no field 'x'");
  msg = parse_error(kBase, {"train=5"});
  EXPECT_HAS(msg, "train is a block, not a value");
}

TEST(Config, FailedOverrideLeavesConfigUnchanged) {
  config::Config cfg;
  cfg.mutable_train()->set_steps(3);
  const config::Config before = cfg;
  config_error([&] { apply_override(cfg, "model.n_layer.x=5", "cfg"); });
  config_error([&] { apply_override(cfg, "train.steps=abc", "cfg"); });
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(cfg, before));
  EXPECT_FALSE(cfg.has_model());
}

TEST(Config, ValidationNamesTheOverride) {
  const std::string msg = parse_error(kBase, {"train.steps=0"});
  EXPECT_HAS(msg, "--set train.steps=0: train.steps must be > 0 (got 0)");
}

TEST(Config, OverrideFixesAnInvalidFile) {
  config::Config cfg =
      parse_config_text(base_with("seq_len: 16", "seq_len: 128"), "test.pbtxt", {"model.max_seq_len=128"});
  EXPECT_EQ(cfg.model().max_seq_len(), 128);
}

}  // namespace
}  // namespace tt

namespace tt {
namespace {

// ---- every problem at once, a byte order mark, bounds, changes ---------------------------------

TEST(ConfigReliability, EveryLineLevelParseErrorIsReportedAtOnce) {
  std::string text = base_with("n_layer: 2", "n_layers: 2");
  text.replace(text.find("batch_size: 2"), 13, "batch_size: \"x\"");
  const std::string msg = parse_error(text);
  EXPECT_HAS(msg, "2 problems in the config:");
  EXPECT_HAS(msg, "test.pbtxt:2:3: unknown field 'n_layers'");
  EXPECT_HAS(msg, "test.pbtxt:9:");
  EXPECT_HAS(msg, "batch_size");
}

TEST(ConfigReliability, AnErrorOnABlockLineStopsTheSearchInsteadOfReportingPhantoms) {
  const std::string msg = parse_error(base_with("train {", "trian {"));
  EXPECT_HAS(msg, "test.pbtxt:8:1: unknown field 'trian'");
  EXPECT_EQ(msg.find("problems in the config"), std::string::npos) << msg;
}

TEST(ConfigReliability, AUtf8ByteOrderMarkIsSkipped) {
  const config::Config cfg = parse_config_text("\xEF\xBB\xBF" + kBase, "bom.pbtxt");
  EXPECT_EQ(cfg.model().n_layer(), 2);
}

TEST(ConfigReliability, SizesBeyondAnyModelAndAnEmptyRunDirAreReportedTogether) {
  const std::string msg = parse_error(kBase, {"model.n_embd=1073741824", "model.vocab_size=2147483647",
                                              "logging.run_dir=", "train.max_skipped_steps=-1"});
  EXPECT_HAS(msg, "model.n_embd (1073741824) is over the largest supported value, 131072");
  EXPECT_HAS(msg, "model.vocab_size (2147483647) is over the largest supported value, 16777216");
  EXPECT_HAS(msg, "logging.run_dir is empty");
  EXPECT_HAS(msg, "train.max_skipped_steps must be >= 0");
}

TEST(ConfigReliability, ChangesListTheFieldsThatDiffer) {
  const config::Config a = parse_config_text(kBase, "a");
  const config::Config b = parse_config_text(kBase, "b", {"train.batch_size=4", "optimizer.lr=0.01"});
  const std::vector<std::string> changes = config_changes(a, b);
  ASSERT_EQ(changes.size(), 2u) << ::testing::PrintToString(changes);
  EXPECT_EQ(changes[0], "train.batch_size: 2 -> 4");
  EXPECT_EQ(changes[1], "optimizer.lr: 0.001 -> 0.01");
  EXPECT_TRUE(config_changes(a, a).empty());
}

}  // namespace
}  // namespace tt
