// Tests for data/encode.h (`topotrain data encode`): byte-identical shards for 1, 2 and 4 threads,
// <|endoftext|> before every document, JSONL "text" fields and file:line errors for malformed lines,
// val/train split sizes and llm.c shard names, manifest contents, document splitting and safe
// chunking, input errors leaving no partial data set. Most tests use a byte-level stand-in
// tokenizer (id = byte, eot = 256), so they need no tokenizer files; the GPT-2 tests (tiktoken
// reference over brown.txt, the CLI round trip with `data inspect`) skip when ../shared is absent.
#include "data/encode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/sha256.h"
#include "data/bpe_tokenizer.h"
#include "tests/test_util.h"

namespace tt::data {
namespace {

using tt::test::TempDir;
using tt::test::write_file;
namespace fs = std::filesystem;

constexpr uint32_t kEot = 256;

// id = byte value; a little uneven work so threads finish out of order.
TextEncoder byte_encoder(int64_t vocab = 257) {
  TextEncoder e;
  e.encode = [](std::string_view text, std::vector<uint32_t>& out) {
    if (text.size() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    for (unsigned char c : text) out.push_back(c);
  };
  e.vocab_size = vocab;
  e.eot_id = kEot;
  e.origin = "byte-level test tokenizer";
  e.chunkable = true;
  return e;
}

std::vector<uint32_t> with_eot(const std::vector<std::string>& docs) {
  std::vector<uint32_t> out;
  for (const auto& d : docs) {
    out.push_back(kEot);
    for (unsigned char c : d) out.push_back(c);
  }
  return out;
}

// All tokens of the shards in manifest order.
std::vector<uint32_t> read_stream(const std::string& dir, const EncodeResult& r) {
  std::vector<uint32_t> out;
  for (const auto& s : r.shards) {
    ShardReader reader(dir + "/" + s.file);
    for (int64_t i = 0; i < reader.num_tokens(); ++i) out.push_back(reader.token(i));
  }
  return out;
}

std::vector<std::string> bin_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

EncodeOptions options(const std::vector<std::string>& inputs, const std::string& out) {
  EncodeOptions o;
  o.inputs = inputs;
  o.out_dir = out;
  o.threads = 1;
  return o;
}

// A small corpus: nested text files (one with blank-line separated paragraphs) and JSONL.
std::string make_corpus(const TempDir& dir) {
  const std::string root = dir.file("corpus");
  fs::create_directories(root + "/b/deeper");
  std::string long_doc;
  for (int i = 0; i < 200; ++i) long_doc += tt::str("Line ", i, " of a long document.\nNext", i, " x\n");
  write_file(root + "/a.txt", long_doc);
  write_file(root + "/b/deeper/c.txt", "first paragraph\nstill first\n\n  \nsecond one\n\n\nthird\n");
  write_file(root + "/b/d.jsonl", "{\"text\": \"json one\"}\n\n{\"text\": \"json\\ntwo\", \"id\": 7}\n");
  write_file(root + "/b/ignored.md", "not an input");
  write_file(root + "/e.txt", "");
  return root;
}

TEST(EncodeTest, ByteIdenticalShardsForAnyThreadCount) {
  TempDir dir;
  const std::string corpus = make_corpus(dir);
  std::vector<std::string> reference_files;
  std::map<std::string, std::string> reference;
  for (int threads : {1, 2, 4}) {
    EncodeOptions o = options({corpus}, dir.file(tt::str("out", threads)));
    o.name = "corpus";
    o.threads = threads;
    o.unit_bytes = 40;  // many units, and the long document is chunked
    o.shard_tokens = 1000;
    o.val_tokens = 1500;
    o.split = parse_separator("blankline");
    EncodeResult r = encode_corpus(o, byte_encoder());
    EXPECT_EQ(r.threads, threads);
    std::vector<std::string> files = bin_files(o.out_dir);
    std::map<std::string, std::string> contents;
    for (const auto& f : files) contents[f] = tt::test::read_file(o.out_dir + "/" + f);
    if (threads == 1) {
      reference_files = files;
      reference = contents;
      continue;
    }
    EXPECT_EQ(files, reference_files) << "threads " << threads;
    for (const auto& [f, bytes] : reference)
      EXPECT_TRUE(contents[f] == bytes) << f << " differs with " << threads << " threads";
  }
  EXPECT_GE(reference_files.size(), 4u);
}

TEST(EncodeTest, EotBeforeEveryDocumentInInputOrder) {
  TempDir dir;
  const std::string corpus = make_corpus(dir);
  EncodeOptions o = options({corpus}, dir.file("out"));
  o.threads = 3;
  o.unit_bytes = 50;
  o.split = parse_separator("blankline");
  EncodeResult r = encode_corpus(o, byte_encoder());
  // Sorted paths: a.txt, b/d.jsonl, b/deeper/c.txt, e.txt (empty: no document); ignored.md skipped.
  ASSERT_EQ(r.files.size(), 4u);
  EXPECT_EQ(r.files[0], corpus + "/a.txt");
  EXPECT_EQ(r.files[1], corpus + "/b/d.jsonl");
  EXPECT_EQ(r.files[2], corpus + "/b/deeper/c.txt");
  std::string long_doc = tt::test::read_file(corpus + "/a.txt");
  const std::vector<uint32_t> expect =
      with_eot({long_doc, "json one", "json\ntwo", "first paragraph\nstill first\n", "second one\n", "third\n"});
  EXPECT_EQ(read_stream(o.out_dir, r), expect);
  EXPECT_EQ(r.documents, 6);
  EXPECT_EQ(r.tokens, int64_t(expect.size()));
  EXPECT_EQ(r.name, "out");
  ASSERT_EQ(r.shards.size(), 1u);
  EXPECT_EQ(r.shards[0].file, "out_train_000000.bin");
}

TEST(EncodeTest, JsonlTextFieldAndMalformedLines) {
  TempDir dir;
  write_file(dir.file("ok.jsonl"),
             "{\"text\": \"ab\", \"meta\": {\"x\": 1}}\r\n   \n{\"text\": \"\\u00e9\"}\n{\"text\": \"\"}\n");
  EncodeResult r = encode_corpus(options({dir.file("ok.jsonl")}, dir.file("out")), byte_encoder());
  EXPECT_EQ(read_stream(dir.file("out"), r), with_eot({"ab", "\xc3\xa9"}));  // empty text: no document

  struct Case {
    std::string content, message;
    int line;
  };
  const std::vector<Case> cases = {
      {"{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"text\": \"c\"\n", "malformed JSON", 3},
      {"{\"text\": \"a\"}\n\n[1, 2]\n", "not a JSON object", 3},
      {"{\"body\": \"a\"}\n", "no \"text\" field", 1},
      {"{\"text\": \"a\"}\n{\"text\": 5}\n", "not a string", 2},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file = dir.file(tt::str("bad", i, ".jsonl"));
    write_file(file, cases[i].content);
    const std::string out = dir.file(tt::str("bad_out", i));
    for (int threads : {1, 4}) {
      EncodeOptions o = options({dir.file("ok.jsonl"), file}, out);
      o.threads = threads;
      o.shard_tokens = 2;  // shards of ok.jsonl are written before the error ...
      try {
        encode_corpus(o, byte_encoder());
        FAIL() << "expected an error for case " << i;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kData);
        EXPECT_EQ(e.where(), tt::str(file, ":", cases[i].line)) << e.what();
        EXPECT_NE(e.problem().find(cases[i].message), std::string::npos) << e.what();
        EXPECT_NE(e.hint().find("\"text\" field"), std::string::npos) << e.what();
      }
      EXPECT_EQ(bin_files(out), std::vector<std::string>{}) << "... and removed after it";
    }
  }
}

TEST(EncodeTest, ValSplitSizesAndShardNames) {
  TempDir dir;
  std::string text(999, 'x');  // one document: 1000 tokens with its EOT
  write_file(dir.file("doc.txt"), text);
  struct Case {
    int64_t shard, val;
    std::vector<std::pair<std::string, int64_t>> shards;
  };
  const std::vector<Case> cases = {
      {300,
       0,
       {{"t_train_000000.bin", 300},
        {"t_train_000001.bin", 300},
        {"t_train_000002.bin", 300},
        {"t_train_000003.bin", 100}}},
      {400,
       150,
       {{"t_val_000000.bin", 150},
        {"t_train_000001.bin", 400},
        {"t_train_000002.bin", 400},
        {"t_train_000003.bin", 50}}},
      {400,
       500,
       {{"t_val_000000.bin", 400},
        {"t_val_000001.bin", 100},
        {"t_train_000002.bin", 400},
        {"t_train_000003.bin", 100}}},
      {100000000, 1000, {{"t_val_000000.bin", 1000}}},
      {100000000, 5000, {{"t_val_000000.bin", 1000}}},
      {1000, 0, {{"t_train_000000.bin", 1000}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EncodeOptions o = options({dir.file("doc.txt")}, dir.file(tt::str("out", i)));
    o.name = "t";
    o.shard_tokens = cases[i].shard;
    o.val_tokens = cases[i].val;
    EncodeResult r = encode_corpus(o, byte_encoder());
    ASSERT_EQ(r.shards.size(), cases[i].shards.size()) << "case " << i;
    int64_t val = 0;
    for (size_t k = 0; k < r.shards.size(); ++k) {
      EXPECT_EQ(r.shards[k].file, cases[i].shards[k].first) << "case " << i;
      EXPECT_EQ(r.shards[k].tokens, cases[i].shards[k].second) << "case " << i;
      EXPECT_EQ(ShardReader(o.out_dir + "/" + r.shards[k].file).num_tokens(), r.shards[k].tokens);
      if (r.shards[k].split == "val") val += r.shards[k].tokens;
    }
    EXPECT_EQ(r.val_tokens, val);
    EXPECT_EQ(r.val_tokens, std::min<int64_t>(cases[i].val, 1000));
    EXPECT_EQ(r.train_tokens, 1000 - r.val_tokens);
    EXPECT_EQ(read_stream(o.out_dir, r), with_eot({text}));
  }
}

TEST(EncodeTest, ManifestContents) {
  TempDir dir;
  write_file(dir.file("a.txt"), "doc one|||doc two|||");
  EncodeOptions o = options({dir.file("a.txt")}, dir.file("data/mine/"));
  o.split = parse_separator("|||");
  o.shard_tokens = 10;
  o.val_tokens = 4;
  EncodeResult r = encode_corpus(o, byte_encoder());
  EXPECT_EQ(r.name, "mine");
  EXPECT_EQ(r.manifest_path, o.out_dir + "/manifest.json");
  const EncodeManifest m = read_encode_manifest(r.manifest_path);
  EXPECT_EQ(m.name, "mine");
  EXPECT_EQ(m.tokenizer, "byte-level test tokenizer");
  EXPECT_EQ(m.vocab_size, 257);
  EXPECT_EQ(m.eot_id, 256);
  EXPECT_EQ(m.token_dtype, "uint16");
  EXPECT_EQ(m.documents, 2);
  EXPECT_EQ(m.tokens, 16);
  EXPECT_EQ(m.val_tokens, 4);
  EXPECT_EQ(m.train_tokens, 12);
  ASSERT_EQ(m.shards.size(), 3u);  // val 4, train 10, train 2
  for (size_t k = 0; k < m.shards.size(); ++k) {
    const std::string path = o.out_dir + "/" + m.shards[k].file;
    EXPECT_EQ(m.shards[k].sha256, file_sha256(path));
    EXPECT_EQ(m.shards[k].sha256, sha256_hex(tt::test::read_file(path)));
    EXPECT_EQ(m.shards[k].bytes, fs::file_size(path));
    EXPECT_EQ(m.shards[k].file, r.shards[k].file);
  }
  EXPECT_EQ(m.shards[0].split, "val");
  EXPECT_EQ(m.shards[2].tokens, 2);
  const auto j = nlohmann::json::parse(tt::test::read_file(r.manifest_path));
  EXPECT_EQ(j["inputs"]["paths"][0], dir.file("a.txt"));
  EXPECT_EQ(j["inputs"]["bytes"], 20);
  EXPECT_EQ(j["shard_tokens"], 10);
  EXPECT_EQ(j["documents"]["separator"], "|||");
  EXPECT_EQ(j["documents"]["eot_before_each"], true);

  // A second run into the same directory is refused (shards of two runs must not mix).
  try {
    encode_corpus(o, byte_encoder());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("already holds"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_encode_manifest(dir.file("a.txt")), Error);
}

// A fuzz finding: a count written as a float beyond int64 (or negative, or fractional) was
// converted with undefined behaviour; now it is a data error naming the field.
TEST(EncodeTest, ManifestCountsMustBeIntegersNamingTheField) {
  TempDir dir;
  const std::string head = R"({"format": "topotrain-shards-v1", "name": "x", "tokenizer": {"origin": "gpt2", )";
  const std::string tail = R"(, "token_dtype": "uint16", "documents": {"count": 2},
      "tokens": {"total": 10, "val": 4, "train": 6}, "shards": []})";
  for (const auto& [eot, field] : std::vector<std::pair<std::string, std::string>>{
           {R"("vocab_size": 50257, "eot_id": 5e300})", "tokenizer.eot_id"},
           {R"("vocab_size": -3, "eot_id": 2})", "tokenizer.vocab_size"},
           {R"("vocab_size": 2.5, "eot_id": 2})", "tokenizer.vocab_size"}}) {
    write_file(dir.file("manifest.json"), head + eot + tail);
    try {
      read_encode_manifest(dir.file("manifest.json"));
      ADD_FAILURE() << "expected a data error for " << eot;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kData);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("manifest.json"), std::string::npos) << e.what();
    }
  }
  write_file(dir.file("manifest.json"), head + R"("vocab_size": 50257, "eot_id": 50256})" + tail);
  EXPECT_EQ(read_encode_manifest(dir.file("manifest.json")).eot_id, 50256);
}

TEST(EncodeTest, Uint32ShardsForLargeVocabularies) {
  TempDir dir;
  write_file(dir.file("a.txt"), "hi");
  EncodeResult r = encode_corpus(options({dir.file("a.txt")}, dir.file("out")), byte_encoder(70000));
  EXPECT_EQ(r.width, TokenWidth::kUint32);
  ShardReader reader(dir.file("out/out_train_000000.bin"));
  EXPECT_EQ(reader.header().magic, kShardMagicUint32);
  EncodeResult r16 = encode_corpus(options({dir.file("a.txt")}, dir.file("out16")), byte_encoder(65536));
  EXPECT_EQ(r16.width, TokenWidth::kUint16);
}

TEST(EncodeTest, InputErrorsLeaveNoPartialDataSet) {
  TempDir dir;
  // Missing input, directory without inputs, no documents at all.
  auto kind_where = [&](const EncodeOptions& o) -> std::pair<ErrorKind, std::string> {
    try {
      encode_corpus(o, byte_encoder());
    } catch (const Error& e) {
      return {e.kind(), e.where()};
    }
    return {ErrorKind::kInternal, ""};
  };
  EXPECT_EQ(kind_where(options({dir.file("nope.txt")}, dir.file("o1"))),
            std::make_pair(ErrorKind::kData, dir.file("nope.txt")));
  fs::create_directories(dir.file("empty_dir"));
  write_file(dir.file("empty_dir/x.csv"), "a,b");
  EXPECT_EQ(kind_where(options({dir.file("empty_dir")}, dir.file("o2"))),
            std::make_pair(ErrorKind::kData, dir.file("empty_dir")));
  write_file(dir.file("empty.txt"), "");
  EXPECT_EQ(kind_where(options({dir.file("empty.txt")}, dir.file("o3"))).first, ErrorKind::kData);
  EXPECT_EQ(kind_where(options({}, dir.file("o4"))).first, ErrorKind::kConfig);
  EncodeOptions bad_shard = options({dir.file("empty.txt")}, dir.file("o5"));
  bad_shard.shard_tokens = 0;
  EXPECT_EQ(kind_where(bad_shard).first, ErrorKind::kConfig);

  // An input that vanishes while encoding: the tokenizer deletes the second file while the first is
  // encoded. The error names it; the shards already written are removed; no manifest.
  fs::create_directories(dir.file("in"));
  write_file(dir.file("in/1.txt"), std::string(100, 'a'));
  write_file(dir.file("in/2.txt"), std::string(100, 'b'));
  TextEncoder enc = byte_encoder();
  auto inner = enc.encode;
  const std::string victim = dir.file("in/2.txt");
  enc.encode = [inner, victim](std::string_view t, std::vector<uint32_t>& out) {
    std::remove(victim.c_str());
    inner(t, out);
  };
  EncodeOptions o = options({dir.file("in")}, dir.file("out"));
  o.shard_tokens = 10;
  try {
    encode_corpus(o, enc);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_EQ(e.where(), victim);
    EXPECT_NE(e.problem().find("cannot read input"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bin_files(dir.file("out")), std::vector<std::string>{});
}

TEST(EncodeTest, SeparatorsAndDocumentSplitting) {
  using Kind = DocumentSplit::Kind;
  EXPECT_EQ(parse_separator("").kind, Kind::kWholeFile);
  EXPECT_EQ(parse_separator("blankline").kind, Kind::kBlankLines);
  EXPECT_EQ(parse_separator("blank-line").kind, Kind::kBlankLines);
  EXPECT_EQ(parse_separator("\\n---\\n").literal, "\n---\n");
  EXPECT_EQ(parse_separator("a\\tb\\\\").literal, "a\tb\\");
  EXPECT_THROW(parse_separator("\\q"), Error);
  EXPECT_THROW(parse_separator("x\\"), Error);

  using V = std::vector<std::string_view>;
  EXPECT_EQ(split_documents("a<s>b<s><s>c", parse_separator("<s>")), (V{"a", "b", "c"}));
  EXPECT_EQ(split_documents("<s>", parse_separator("<s>")), V{});
  EXPECT_EQ(split_documents("x\ny\n \t\n\nz", parse_separator("blankline")), (V{"x\ny\n", "z"}));
  EXPECT_EQ(split_documents("\n\nx\r\n\r\ny\n", parse_separator("blankline")), (V{"x\r\n", "y\n"}));
  EXPECT_EQ(split_documents("whole\n\nfile", DocumentSplit{}), V{"whole\n\nfile"});
  EXPECT_EQ(split_documents("", DocumentSplit{}), V{});
}

TEST(EncodeTest, ChunkingCutsOnlyAtSafeNewlines) {
  using V = std::vector<std::string_view>;
  std::string doc;
  for (int i = 0; i < 50; ++i) doc += tt::str("word", i, ".\nX  \n y\n\n");
  const auto pieces = chunk_document(doc, 16);
  ASSERT_GT(pieces.size(), 10u);
  std::string joined;
  for (size_t k = 0; k < pieces.size(); ++k) {
    joined += std::string(pieces[k]);
    if (k + 1 < pieces.size()) {
      EXPECT_GE(pieces[k].size(), 16u);
      // Cut right after "<solid>\n" with a solid byte next.
      const std::string_view p = pieces[k];
      ASSERT_GE(p.size(), 2u);
      EXPECT_EQ(p.back(), '\n');
      EXPECT_TRUE(p[p.size() - 2] > ' ' && p[p.size() - 2] < 127);
      EXPECT_TRUE(pieces[k + 1][0] > ' ' && pieces[k + 1][0] < 127);
    }
  }
  EXPECT_EQ(joined, doc);
  EXPECT_EQ(chunk_document("no newline at all, long enough", 4).size(), 1u);
  EXPECT_EQ(chunk_document("a \n b \n c", 1).size(), 1u);  // spaces around every newline
  EXPECT_EQ(chunk_document("a\n\xc2\xa0"
                           "b\nc",
                           1),
            (V{"a\n\xc2\xa0"
               "b\n",
               "c"}));  // non-ASCII is not solid
}

// ---- with the GPT-2 tokenizer (../shared/data/gpt2) --------------------------------------------

std::string gpt2_dir() {
  const std::string shared = tt::test::shared_dir();
  const std::string dir = shared.empty() ? "" : shared + "/data/gpt2";
  return !dir.empty() && fs::exists(dir + "/encoder.json") && fs::exists(dir + "/vocab.bpe") ? dir : "";
}

TEST(EncodeGpt2Test, BrownMatchesTiktokenForAnyChunkingAndThreads) {
  const std::string gpt2 = gpt2_dir();
  if (gpt2.empty()) GTEST_SKIP() << "GPT-2 tokenizer files not found under ../shared/data/gpt2";
  const std::string brown = tt::test::shared_dir() + "/data/corpus/brown.txt";
  if (!fs::exists(brown)) GTEST_SKIP() << "brown.txt not found under ../shared/data/corpus";
  const auto ref = nlohmann::json::parse(tt::test::read_file(gpt2 + "/brown_tokens.json"));
  const TextEncoder enc = text_encoder(BpeTokenizer::load(gpt2));
  EXPECT_EQ(enc.vocab_size, 50257);
  EXPECT_EQ(enc.eot_id, 50256u);
  TempDir dir;
  std::string first_bytes;
  for (int threads : {1, 2}) {
    EncodeOptions o = options({brown}, dir.file(tt::str("t", threads)));
    o.threads = threads;
    o.unit_bytes = 64 * 1024;  // ~90 chunks of the single document
    EncodeResult r = encode_corpus(o, enc);
    std::printf("[ info ] brown.txt, %d thread(s): %.2f MB/s (%.2f s, %lld tokens)\n", threads,
                double(r.input_bytes) / 1e6 / r.seconds, r.seconds, static_cast<long long>(r.tokens));
    ASSERT_EQ(r.documents, 1);
    ASSERT_EQ(r.shards.size(), 1u);
    const std::vector<uint32_t> tokens = read_stream(o.out_dir, r);
    ASSERT_EQ(tokens.front(), 50256u);
    ASSERT_EQ(int64_t(tokens.size()) - 1, ref["count"].get<int64_t>());
    EXPECT_EQ(sha256_hex(tokens.data() + 1, (tokens.size() - 1) * sizeof(uint32_t)), ref["sha256_u32le"])
        << "chunked encoding differs from tiktoken's encoding of the whole text";
    const std::string bytes = tt::test::read_file(o.out_dir + "/" + r.shards[0].file);
    if (threads == 1)
      first_bytes = bytes;
    else
      EXPECT_TRUE(bytes == first_bytes) << "shards differ between 1 and 2 threads";
  }
}

TEST(EncodeGpt2Test, CommandLineEncodeThenInspect) {
  const std::string gpt2 = gpt2_dir();
  if (gpt2.empty()) GTEST_SKIP() << "GPT-2 tokenizer files not found under ../shared/data/gpt2";
  TempDir dir;
  std::string jsonl;
  for (int i = 0; i < 40; ++i) jsonl += tt::str("{\"text\": \"Document number ", i, " says hello world.\"}\n");
  fs::create_directories(dir.file("in"));
  write_file(dir.file("in/docs.jsonl"), jsonl);
  const std::string out = dir.file("enc");
  auto r = tt::test::run_topotrain(tt::str("data encode --tokenizer ", gpt2, " --input ", dir.file("in"), " --out ",
                                           out, " --shard-tokens 200 --val-tokens 50 --threads 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("encoded 40 documents"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("enc_val_000000.bin"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("data.train="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MB/s"), std::string::npos) << r.output;

  auto in = tt::test::run_topotrain(tt::str("data inspect ", out, " --tokenizer ", gpt2));
  ASSERT_EQ(in.exit_code, 0) << in.output;
  EXPECT_NE(in.output.find("decoded (first 64 tokens)"), std::string::npos) << in.output;
  EXPECT_NE(in.output.find("<|endoftext|>Document number"), std::string::npos) << in.output;
  EXPECT_NE(in.output.find(" ok "), std::string::npos) << in.output;
  EXPECT_NE(in.output.find("40 documents"), std::string::npos) << in.output;

  // A flipped byte fails the manifest's sha256; a truncated shard fails the shard reader: exit 3.
  const std::string shard = out + "/enc_train_000001.bin";
  std::string bytes = tt::test::read_file(shard);
  bytes[1100] ^= 1;
  write_file(shard, bytes);
  auto bad = tt::test::run_topotrain(tt::str("data inspect ", out));
  EXPECT_EQ(bad.exit_code, 3) << bad.output;
  EXPECT_NE(bad.output.find("sha256"), std::string::npos) << bad.output;
  write_file(shard, bytes.substr(0, bytes.size() - 3));
  auto cut = tt::test::run_topotrain(tt::str("data inspect ", shard));
  EXPECT_EQ(cut.exit_code, 3) << cut.output;
  EXPECT_NE(cut.output.find(shard), std::string::npos) << cut.output;

  auto again = tt::test::run_topotrain(
      tt::str("data encode --tokenizer ", gpt2, " --input ", dir.file("in"), " --out ", out, " --quiet"));
  EXPECT_EQ(again.exit_code, 2) << again.output;
  auto usage = tt::test::run_topotrain("data encode --input x");
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
}

}  // namespace
}  // namespace tt::data
