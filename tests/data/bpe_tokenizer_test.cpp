// Byte-level BPE tokenizer: exact GPT-2 ids (tiktoken's, from ../shared), byte-exact round trips
// on arbitrary bytes, Hugging Face tokenizer.json loading, merge semantics, errors that name the
// file, the OpenAI writer, concurrent encoding and the tokenize/detokenize CLI.
#include "data/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/error.h"
#include "core/sha256.h"
#include "tests/test_util.h"

namespace tt::data {
namespace {

using nlohmann::json;

std::string gpt2_dir() {
  const std::string shared = test::shared_dir();
  return shared.empty() ? "" : shared + "/data/gpt2";
}

#define REQUIRE_GPT2() \
  if (gpt2_dir().empty()) GTEST_SKIP() << "../shared not present: needs ../shared/data/gpt2 (GPT-2 tokenizer files)"

// Loaded once: the suites below share one instance (the tokenizer is immutable and thread-safe).
const BpeTokenizer& gpt2() {
  static const BpeTokenizer tok = BpeTokenizer::load(gpt2_dir());
  return tok;
}

json shared_cases() { return json::parse(test::read_file(gpt2_dir() + "/tokenizer_cases.json")); }

// The GPT-2 files as a Hugging Face tokenizer.json (what `tokenizers` saves for "gpt2").
std::string gpt2_as_hf_json(bool merges_as_pairs) {
  const json enc = json::parse(test::read_file(gpt2_dir() + "/encoder.json"));
  const std::string bpe = test::read_file(gpt2_dir() + "/vocab.bpe");
  json merges = json::array();
  size_t begin = bpe.find('\n') + 1;
  while (begin < bpe.size()) {
    size_t end = bpe.find('\n', begin);
    if (end == std::string::npos) end = bpe.size();
    const std::string line = bpe.substr(begin, end - begin);
    begin = end + 1;
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (merges_as_pairs)
      merges.push_back(json::array({line.substr(0, sp), line.substr(sp + 1)}));
    else
      merges.push_back(line);
  }
  json j;
  j["version"] = "1.0";
  j["added_tokens"] = json::array({{{"id", 50256}, {"content", "<|endoftext|>"}, {"special", true}}});
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", enc}, {"merges", merges}};
  return j.dump();
}

// A toy byte-level vocabulary: the 256 bytes (id = byte value), then merge products.
json toy_vocab() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_to_unicode(uint8_t(b))] = b;
  return vocab;
}

json toy_hf(const json& vocab, const json& merges) {
  json j;
  j["added_tokens"] = json::array();
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
  return j;
}

std::string catch_where(const std::function<void()>& fn, ErrorKind expected_kind, std::string* what = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), expected_kind) << e.what();
    if (what) *what = e.problem();
    return e.where();
  }
  ADD_FAILURE() << "no tt::Error thrown";
  return "";
}

// ---- GPT-2 exactness (tiktoken's ids) ----------------------------------------------------------

TEST(BpeTokenizerGpt2, SharedCasesExact) {
  REQUIRE_GPT2();
  const json cases = shared_cases();
  ASSERT_GT(cases.size(), 0u);
  for (const auto& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<uint32_t> expected = c["ids"].get<std::vector<uint32_t>>();
    EXPECT_EQ(gpt2().encode(text), expected) << "text: " << json(text).dump();
    EXPECT_EQ(gpt2().decode(expected), text);
  }
}

TEST(BpeTokenizerGpt2, KnownIds) {
  REQUIRE_GPT2();
  EXPECT_EQ(gpt2().encode("Hello world"), (std::vector<uint32_t>{15496, 995}));
  EXPECT_EQ(gpt2().encode("  \n\n hi"), (std::vector<uint32_t>{220, 220, 628, 23105}));
  EXPECT_EQ(gpt2().encode("a\xc2\x85"
                          "b"),
            (std::vector<uint32_t>{64, 126, 227, 65}));  // NEL is whitespace
  EXPECT_EQ(gpt2().encode(""), std::vector<uint32_t>{});
}

TEST(BpeTokenizerGpt2, BrownCorpusAsOneDocument) {
  REQUIRE_GPT2();
  const std::string shared = test::shared_dir();
  const std::string text = test::read_file(shared + "/data/corpus/brown.txt");
  const json ref = json::parse(test::read_file(shared + "/data/gpt2/brown_tokens.json"));
  const std::vector<uint32_t> ids = gpt2().encode(text);
  ASSERT_EQ(ids.size(), ref["count"].get<size_t>());
  std::vector<uint8_t> le(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int b = 0; b < 4; ++b) le[4 * i + b] = uint8_t(ids[i] >> (8 * b));
  EXPECT_EQ(sha256_hex(le.data(), le.size()), ref["sha256_u32le"].get<std::string>());
  const auto first = ref["first"].get<std::vector<uint32_t>>();
  const auto last = ref["last"].get<std::vector<uint32_t>>();
  EXPECT_EQ(std::vector<uint32_t>(ids.begin(), ids.begin() + first.size()), first);
  EXPECT_EQ(std::vector<uint32_t>(ids.end() - last.size(), ids.end()), last);
  EXPECT_EQ(gpt2().decode(ids), text);
}

TEST(BpeTokenizerGpt2, SpecialTokensArePlainTextWhenEncoding) {
  REQUIRE_GPT2();
  EXPECT_EQ(gpt2().vocab_size(), 50257);
  EXPECT_EQ(gpt2().special_token_id("<|endoftext|>"), std::optional<uint32_t>(50256));
  EXPECT_EQ(gpt2().eot_id(), 50256u);
  EXPECT_EQ(gpt2().special_token_id("<|im_start|>"), std::nullopt);
  // tiktoken's encode_ordinary ids.
  EXPECT_EQ(gpt2().encode("<|endoftext|>"), (std::vector<uint32_t>{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(gpt2().decode({50256}), "<|endoftext|>");
  EXPECT_EQ(gpt2().decode({15496, 50256, 995}), "Hello<|endoftext|> world");
}

TEST(BpeTokenizerGpt2, DecodeRejectsUnknownIds) {
  REQUIRE_GPT2();
  std::string what;
  catch_where([] { gpt2().decode({15496, 50257}); }, ErrorKind::kData, &what);
  EXPECT_NE(what.find("50257"), std::string::npos) << what;
  EXPECT_NE(what.find("position 1"), std::string::npos) << what;
  catch_where([] { gpt2().token_bytes(4000000000u); }, ErrorKind::kData);
}

TEST(BpeTokenizerGpt2, RoundTripsRandomBytes) {
  REQUIRE_GPT2();
  std::mt19937 rng(1234);
  const std::vector<std::string> tricky = {
      "\x80", "\xbf\xbf", "\xc0\xaf",           "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
      "\xff", "\xfe",     std::string(1, '\0'), "\xc3",         "\xe2\x82",     " \x80 ",
      "'\xff"};
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text;
    const size_t n = rng() % 120;
    for (size_t i = 0; i < n; ++i) {
      switch (rng() % 4) {
        case 0:
          text += tricky[rng() % tricky.size()];
          break;
        case 1:
          text += static_cast<char>(rng());
          break;
        default:
          text += "ab 1'\n.\xc3\xa9"[rng() % 9];
      }
    }
    const std::vector<uint32_t> ids = gpt2().encode(text);
    ASSERT_EQ(gpt2().decode(ids), text) << "trial " << trial;
  }
  // Long single pieces use the heap merger; they round-trip too and match the whole-piece tokens.
  for (const std::string& s : {std::string(5000, 'a'), std::string(3000, '\xff'), std::string(100, ' ') + "x",
                               std::string(70, '!') + std::string(70, '\x80')})
    EXPECT_EQ(gpt2().decode(gpt2().encode(s)), s);
}

// Appends the UTF-8 encoding of a code point.
void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | cp >> 6), s += char(0x80 | (cp & 63));
  } else if (cp < 0x10000) {
    s += char(0xE0 | cp >> 12), s += char(0x80 | ((cp >> 6) & 63)), s += char(0x80 | (cp & 63));
  } else {
    s += char(0xF0 | cp >> 18), s += char(0x80 | ((cp >> 12) & 63)), s += char(0x80 | ((cp >> 6) & 63)),
        s += char(0x80 | (cp & 63));
  }
}

TEST(BpeTokenizerGpt2, RoundTripsRandomUnicodeText) {
  REQUIRE_GPT2();
  std::mt19937 rng(99);
  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
      {0x20, 0x7e},       {0xa0, 0x17f},      {0x370, 0x3ff},   {0x400, 0x4ff},     {0x590, 0x6ff},
      {0x900, 0x97f},     {0x3040, 0x30ff},   {0x4e00, 0x9fff}, {0xac00, 0xd7a3},   {0x2000, 0x206f},
      {0x1f300, 0x1f6ff}, {0x1f900, 0x1f9ff}, {0x0, 0x1f},      {0x10000, 0x10ffff}};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    const size_t n = rng() % 80;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 3 == 0) {
        text += " \n\t0123456789  \n\n"[rng() % 17];
        continue;
      }
      const auto& r = ranges[rng() % ranges.size()];
      uint32_t cp = r.first + rng() % (r.second - r.first + 1);
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
      append_utf8(text, cp);
    }
    ASSERT_EQ(gpt2().decode(gpt2().encode(text)), text) << "trial " << trial;
  }
}

TEST(BpeTokenizerGpt2, ConcurrentEncodingMatchesSerial) {
  REQUIRE_GPT2();
  const std::string text = test::read_file(test::shared_dir() + "/data/corpus/brown.txt").substr(0, 400000);
  const std::vector<uint32_t> expected = gpt2().encode(text);
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { ok[t] = gpt2().encode(text) == expected; });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

TEST(BpeTokenizerGpt2, OpenAiRoundTripThroughStrings) {
  REQUIRE_GPT2();
  const BpeTokenizer again = BpeTokenizer::from_openai_files(gpt2().encoder_json(), gpt2().vocab_bpe(), "memory");
  EXPECT_EQ(json::parse(gpt2().encoder_json()), json::parse(test::read_file(gpt2_dir() + "/encoder.json")));
  EXPECT_EQ(gpt2().vocab_bpe(), test::read_file(gpt2_dir() + "/vocab.bpe"));
  EXPECT_EQ(again.vocab_size(), 50257);
  EXPECT_EQ(again.eot_id(), 50256u);
  for (const auto& c : shared_cases())
    EXPECT_EQ(again.encode(c["text"].get<std::string>()), c["ids"].get<std::vector<uint32_t>>());
}

TEST(BpeTokenizerGpt2, HuggingFaceTokenizerJsonGivesTheSameIds) {
  REQUIRE_GPT2();
  test::TempDir dir;
  const std::string brown = test::read_file(test::shared_dir() + "/data/corpus/brown.txt").substr(0, 300000);
  const std::vector<uint32_t> brown_ids = gpt2().encode(brown);
  for (bool pairs : {false, true}) {
    test::write_file(dir.file("tokenizer.json"), gpt2_as_hf_json(pairs));
    for (const std::string& path : {dir.path(), dir.file("tokenizer.json")}) {
      const BpeTokenizer hf = BpeTokenizer::load(path);
      EXPECT_EQ(hf.vocab_size(), 50257);
      EXPECT_EQ(hf.eot_id(), 50256u);
      for (const auto& c : shared_cases())
        EXPECT_EQ(hf.encode(c["text"].get<std::string>()), c["ids"].get<std::vector<uint32_t>>());
      EXPECT_EQ(hf.encode(brown), brown_ids);
    }
  }
}

TEST(BpeTokenizerGpt2, LoadsFromEitherOpenAiFile) {
  REQUIRE_GPT2();
  for (const char* name : {"/encoder.json", "/vocab.bpe"}) {
    const BpeTokenizer t = BpeTokenizer::load(gpt2_dir() + name);
    EXPECT_EQ(t.encode("Hello world"), (std::vector<uint32_t>{15496, 995}));
  }
}

// ---- toy vocabularies: merge semantics and the Hugging Face format -----------------------------

TEST(BpeTokenizerToy, HuggingFaceMergesInRankOrder) {
  json vocab = toy_vocab();
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  vocab
      ["\xc4\xa0"
       "a"] = 258;  // "Ġa" = " a"
  json j = toy_hf(vocab, json::array({"a b", "ab c", json::array({"\xc4\xa0", "a"})}));
  j["added_tokens"] = json::array({{{"id", 259}, {"content", "<|endoftext|>"}, {"special", true}}});
  const BpeTokenizer t = BpeTokenizer::from_hf_json(j.dump(), "toy");
  EXPECT_EQ(t.vocab_size(), 260);
  EXPECT_EQ(t.eot_id(), 259u);
  EXPECT_EQ(t.encode("abc"), (std::vector<uint32_t>{257}));
  EXPECT_EQ(t.encode("abcab"), (std::vector<uint32_t>{257, 256}));
  EXPECT_EQ(t.encode(" a"), (std::vector<uint32_t>{258}));
  EXPECT_EQ(t.encode("xa"), (std::vector<uint32_t>{'x', 'a'}));
  EXPECT_EQ(t.decode({257, 259, 258}), "abc<|endoftext|> a");
  // encoder_json/vocab_bpe export it in OpenAI format.
  const BpeTokenizer openai = BpeTokenizer::from_openai_files(t.encoder_json(), t.vocab_bpe(), "toy export");
  EXPECT_EQ(openai.encode("abcab a"), t.encode("abcab a"));
  EXPECT_EQ(openai.eot_id(), 259u);
}

TEST(BpeTokenizerToy, OpenAiFollowsTiktokenAndHuggingFaceFollowsItsMergeList) {
  // Merges: "b c" first, then "a b", then "ab c". For "abc", b+c merge first; Hugging Face then has
  // no rule for (a, bc), while tiktoken merges any pair whose bytes form a token ("abc").
  json vocab = toy_vocab();
  vocab["bc"] = 256;
  vocab["ab"] = 257;
  vocab["abc"] = 258;
  const BpeTokenizer hf = BpeTokenizer::from_hf_json(toy_hf(vocab, json::array({"b c", "a b", "ab c"})).dump(), "toy");
  EXPECT_EQ(hf.encode("abc"), (std::vector<uint32_t>{'a', 256}));
  EXPECT_EQ(hf.encode("zabc"), (std::vector<uint32_t>{'z', 'a', 256}));
  const BpeTokenizer openai = BpeTokenizer::from_openai_files(hf.encoder_json(), hf.vocab_bpe(), "toy");
  EXPECT_EQ(openai.encode("abc"), (std::vector<uint32_t>{258}));        // whole-piece lookup
  EXPECT_EQ(openai.encode("zabc"), (std::vector<uint32_t>{'z', 258}));  // (a, bc) merges by concatenation
}

TEST(BpeTokenizerToy, EqualRanksMergeLeftmostFirst) {
  json vocab = toy_vocab();
  vocab["aa"] = 256;
  const BpeTokenizer t = BpeTokenizer::from_hf_json(toy_hf(vocab, json::array({"a a"})).dump(), "toy");
  EXPECT_EQ(t.encode("aaa"), (std::vector<uint32_t>{256, 'a'}));
  EXPECT_EQ(t.encode("aaaaa"), (std::vector<uint32_t>{256, 256, 'a'}));
  // Long pieces (heap merger) agree with the same rule.
  std::vector<uint32_t> expected(50, 256);
  expected.push_back('a');
  EXPECT_EQ(t.encode(std::string(101, 'a')), expected);
}

TEST(BpeTokenizerToy, WriteOpenAiTokenizerLoadsBack) {
  test::TempDir dir;
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, char(b));
  tokens.push_back(" t");
  tokens.push_back(" th");
  tokens.push_back("\xff\xfe");
  const std::vector<std::pair<std::string, std::string>> merges = {{" ", "t"}, {" t", "h"}, {"\xff", "\xfe"}};
  write_openai_tokenizer(dir.path() + "/tok", tokens, merges, {"<|endoftext|>", "<|pad|>"});
  const BpeTokenizer t = BpeTokenizer::load(dir.path() + "/tok");
  EXPECT_EQ(t.vocab_size(), 261);
  EXPECT_EQ(t.eot_id(), 259u);
  EXPECT_EQ(t.special_token_id("<|pad|>"), std::optional<uint32_t>(260));
  EXPECT_EQ(t.encode(" the\xff\xfe"), (std::vector<uint32_t>{257, 'e', 258}));
  EXPECT_EQ(t.decode({257, 259}), " th<|endoftext|>");
  EXPECT_EQ(t.encoder_json(), test::read_file(dir.path() + "/tok/encoder.json"));
  EXPECT_EQ(t.vocab_bpe(), test::read_file(dir.path() + "/tok/vocab.bpe"));

  std::string what;
  catch_where([&] { write_openai_tokenizer(dir.path() + "/bad", tokens, {{" t", "x"}}, {}); }, ErrorKind::kData, &what);
  EXPECT_NE(what.find("not a token"), std::string::npos) << what;
  std::vector<std::string> no_z(tokens);
  no_z.erase(no_z.begin() + 'z');
  no_z.insert(no_z.begin() + 'z', "zz");
  catch_where([&] { write_openai_tokenizer(dir.path() + "/bad", no_z, merges, {}); }, ErrorKind::kData);
}

// ---- errors name the file ---------------------------------------------------------------------

TEST(BpeTokenizerErrors, MissingFiles) {
  test::TempDir dir;
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.file("nope")); }, ErrorKind::kData), dir.file("nope"));
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData), dir.path());
  test::write_file(dir.file("encoder.json"), "{}");
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData), dir.file("vocab.bpe"));
}

TEST(BpeTokenizerErrors, MalformedFilesNameTheFile) {
  test::TempDir dir;
  const std::string enc = dir.file("encoder.json"), bpe = dir.file("vocab.bpe");
  test::write_file(enc, "{\"a\": 1,");
  test::write_file(bpe, "#version: 0.2\n");
  std::string what;
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData, &what), enc);
  EXPECT_NE(what.find("JSON"), std::string::npos) << what;

  json vocab = toy_vocab();
  test::write_file(enc, vocab.dump());
  test::write_file(bpe, "#version: 0.2\na b\n");  // "ab" is not in encoder.json
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData, &what), bpe + ":2");
  EXPECT_NE(what.find("not in encoder.json"), std::string::npos) << what;
  test::write_file(bpe, "#version: 0.2\na \xe2\x82\xac\n");  // '€' is not a byte-level symbol
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData, &what), bpe + ":2");
  EXPECT_NE(what.find("byte-level"), std::string::npos) << what;
  test::write_file(bpe, "#version: 0.2\nabc\n");
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData), bpe + ":2");

  json no_a = toy_vocab();
  no_a.erase("a");
  test::write_file(enc, no_a.dump());
  test::write_file(bpe, "#version: 0.2\n");
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData, &what), enc);
  EXPECT_NE(what.find("no token"), std::string::npos) << what;
}

TEST(BpeTokenizerErrors, HuggingFaceFiles) {
  test::TempDir dir;
  const std::string path = dir.file("tokenizer.json");
  auto where_of = [&](const json& j, std::string* what) {
    test::write_file(path, j.dump());
    return catch_where([&] { BpeTokenizer::load(dir.path()); }, ErrorKind::kData, what);
  };
  std::string what;
  test::write_file(path, "not json");
  EXPECT_EQ(catch_where([&] { BpeTokenizer::load(path); }, ErrorKind::kData), path);

  json ok = toy_hf(toy_vocab(), json::array());
  json j = ok;
  j["model"]["vocab"]["\xe2\x82\xac"] = 300;  // '€' is not a byte-level symbol
  EXPECT_EQ(where_of(j, &what), path);
  EXPECT_NE(what.find("byte-level"), std::string::npos) << what;

  j = ok;
  j["model"]["merges"] = json::array({"a q"});  // "aq" is not in the vocab
  EXPECT_EQ(where_of(j, &what), path);
  EXPECT_NE(what.find("not in model.vocab"), std::string::npos) << what;

  j = ok;
  j["model"]["type"] = "WordPiece";
  EXPECT_EQ(where_of(j, &what), path);
  EXPECT_NE(what.find("not BPE"), std::string::npos) << what;

  j = ok;
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_EQ(where_of(j, &what), path);
  EXPECT_NE(what.find("not a byte-level"), std::string::npos) << what;

  j = ok;
  j["pre_tokenizer"]["add_prefix_space"] = true;
  EXPECT_EQ(where_of(j, &what), path);

  j = ok;
  j["model"].erase("vocab");
  EXPECT_EQ(where_of(j, &what), path);

  j = ok;
  j.erase("model");
  EXPECT_EQ(where_of(j, &what), path);

  // Found by tests/fuzz (bpe_hf, bpe_openai): an id far beyond the number of tokens listed is
  // refused; it used to size the id table (4e9 entries: an out-of-memory abort).
  j = ok;
  j["model"]["vocab"]["\xc4\xa0"] = 4000000000u;
  EXPECT_EQ(where_of(j, &what), path);
  EXPECT_NE(what.find("far beyond"), std::string::npos) << what;
  j = ok;
  j["added_tokens"] = json::array({{{"id", 3000000000u}, {"content", "<|x|>"}}});
  EXPECT_EQ(where_of(j, &what), path);
  json huge = toy_vocab();
  huge["<|endoftext|>"] = 4294967294u;
  EXPECT_EQ(catch_where([&] { BpeTokenizer::from_openai_files(huge.dump(), "#version: 0.2\n", "mem"); },
                        ErrorKind::kData, &what),
            "mem [encoder.json]");
  EXPECT_NE(what.find("far beyond"), std::string::npos) << what;

  // A working one loads; without <|endoftext|>, eot_id() is a data error.
  test::write_file(path, ok.dump());
  const BpeTokenizer t = BpeTokenizer::load(path);
  EXPECT_EQ(t.encode("hi"), (std::vector<uint32_t>{'h', 'i'}));
  EXPECT_EQ(catch_where([&] { t.eot_id(); }, ErrorKind::kData), path);
}

// ---- byte-level symbols -----------------------------------------------------------------------

TEST(ByteLevel, BytesToUnicodeIsGpt2s) {
  EXPECT_EQ(byte_to_unicode('!'), "!");
  EXPECT_EQ(byte_to_unicode(' '), "\xc4\xa0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_to_unicode('\n'), "\xc4\x8a");  // U+010A 'Ċ'
  EXPECT_EQ(byte_to_unicode(0), "\xc4\x80");     // U+0100
  EXPECT_EQ(byte_to_unicode(0xAD), "\xc5\x83");  // U+0143, the last one
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  std::string back;
  ASSERT_TRUE(byte_level_decode(byte_level_encode(all), back));
  EXPECT_EQ(back, all);
  EXPECT_FALSE(byte_level_decode("\xe2\x82\xac", back));  // '€'
  EXPECT_FALSE(byte_level_decode(" ", back));             // a raw space is not a symbol
  EXPECT_FALSE(byte_level_decode("\xc4", back));          // truncated UTF-8
}

// ---- the CLI ----------------------------------------------------------------------------------

TEST(TokenizerCli, TokenizeDetokenizeRoundTrip) {
  REQUIRE_GPT2();
  test::TempDir dir;
  const std::string bin = TT_BINARY, tok = gpt2_dir();
  test::write_file(dir.file("in.txt"), "Hello world");
  auto r = test::run_command(bin + " data tokenize --tokenizer " + tok + " < " + dir.file("in.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "[15496, 995]\n");

  std::string bytes = "caf\xc3\xa9 <|endoftext|>\n\n  \xff\xfe\x80 ";
  bytes += std::string(1, '\0') + "\xf0\x9f\x98\x80 42";
  test::write_file(dir.file("in.bin"), bytes);
  r = test::run_command(bin + " data tokenize --tokenizer " + tok + " < " + dir.file("in.bin") + " > " +
                        dir.file("ids.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ids = json::parse(test::read_file(dir.file("ids.json"))).get<std::vector<uint32_t>>();
  EXPECT_EQ(ids, gpt2().encode(bytes));
  r = test::run_command(bin + " data detokenize --tokenizer " + tok + " < " + dir.file("ids.json") + " > " +
                        dir.file("out.bin"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), bytes);

  // Through a pipe, and with the special token id.
  r = test::run_command("echo '[15496, 50256, 995]' | " + bin + " data detokenize --tokenizer " + tok);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "Hello<|endoftext|> world");
}

TEST(TokenizerCli, Errors) {
  REQUIRE_GPT2();
  const std::string bin = TT_BINARY, tok = gpt2_dir();
  auto r = test::run_command("echo '[1, 60000]' | " + bin + " data detokenize --tokenizer " + tok);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("60000"), std::string::npos) << r.output;
  r = test::run_command("echo '[1, ' | " + bin + " data detokenize --tokenizer " + tok);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  r = test::run_command("echo hi | " + bin + " data tokenize --tokenizer /nonexistent/dir");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/dir"), std::string::npos) << r.output;
  r = test::run_command("echo hi | " + bin + " data tokenize");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace tt::data
