// Tests for data/bpe_trainer.h and `topotrain data train-tokenizer`: hand-checked first merges, the
// incremental trainer against a from-scratch reference, chunking/thread independence of the piece
// counts, and the written tokenizer (loads, round-trips, compresses, exact vocab size, <|endoftext|>
// last).
#include "data/bpe_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "data/bpe_tokenizer.h"
#include "data/pretokenizer.h"
#include "tests/data/data_cli_runner.h"
#include "tests/test_util.h"

namespace tt::data {
namespace {

using tt::test::read_file;
using tt::test::TempDir;
using tt::test::write_file;

// English-like text: sentences of common words, deterministic for a seed.
std::string english_like(size_t bytes, uint32_t seed) {
  static const char* kWords[] = {
      "the",   "of",      "and",       "to",       "in",       "a",          "is",      "that",   "for",     "it",
      "was",   "on",      "with",      "he",       "as",       "you",        "at",      "by",     "this",    "from",
      "they",  "we",      "say",       "her",      "she",      "or",         "an",      "will",   "my",      "one",
      "all",   "would",   "there",     "their",    "what",     "so",         "up",      "out",    "if",      "about",
      "who",   "get",     "which",     "go",       "me",       "when",       "make",    "can",    "like",    "time",
      "no",    "just",    "him",       "know",     "take",     "people",     "into",    "year",   "your",    "good",
      "some",  "could",   "them",      "see",      "other",    "than",       "then",    "now",    "look",    "only",
      "come",  "its",     "over",      "think",    "also",     "back",       "after",   "use",    "two",     "how",
      "our",   "work",    "first",     "well",     "way",      "even",       "new",     "want",   "because", "any",
      "these", "give",    "day",       "most",     "us",       "government", "company", "number", "group",   "problem",
      "fact",  "between", "important", "children", "question", "system",     "program", "during"};
  static const char* kSyllables[] = {"ka", "ter", "mon", "sa",  "li", "ve",  "dor", "pra", "ni",  "sel",
                                     "tu", "gan", "ro",  "bel", "fi", "mas", "qui", "zo",  "len", "har"};
  std::mt19937 rng(seed);
  // Lexicon: the common words, then 3000 made-up words of 2-4 syllables; picks are skewed towards
  // the front (roughly Zipf), so there are frequent words and a long tail.
  std::vector<std::string> lexicon(std::begin(kWords), std::end(kWords));
  while (lexicon.size() < 3000 + sizeof(kWords) / sizeof(kWords[0])) {
    std::string w;
    for (int k = 2 + static_cast<int>(rng() % 3); k > 0; --k) w += kSyllables[rng() % 20];
    lexicon.push_back(w);
  }
  const uint64_t n_lex = lexicon.size();
  std::string out;
  while (out.size() < bytes) {
    const int n = 4 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      std::string w = lexicon[(rng() % n_lex) * (rng() % n_lex) / n_lex];
      if (i == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
      out += w;
      if (i + 1 < n) out += (rng() % 13 == 0) ? ", " : " ";
    }
    out += (rng() % 5 == 0) ? "?\n" : ".\n";
    if (rng() % 7 == 0) out += std::to_string(rng() % 2000) + " items were counted.\n";
  }
  return out;
}

// Text that stresses the split rules: whitespace runs, CRLF, tabs, digits, punctuation, contractions,
// UTF-8 letters and spaces (U+00A0, U+3000), invalid UTF-8 and long lines.
std::string tricky_text(size_t bytes, uint32_t seed) {
  static const char* kAtoms[] = {"a",
                                 "b",
                                 "word",
                                 " ",
                                 "  ",
                                 "\n",
                                 "\n\n",
                                 "\r\n",
                                 "\t",
                                 "x \n",
                                 "'s",
                                 "'ll",
                                 "don't",
                                 "123",
                                 "4.5",
                                 "!!",
                                 "?",
                                 "--",
                                 " \n ",
                                 "z",
                                 "Q",
                                 "\n\t",
                                 "(x)",
                                 "  \n",
                                 "_",
                                 "\xc3\xa9t\xc3\xa9",         // été
                                 "\xc2\xa0",                  // U+00A0 no-break space
                                 "\xe3\x80\x80",              // U+3000 ideographic space
                                 "\xff\xfe",                  // invalid UTF-8
                                 "\xe4\xb8\xad\xe6\x96\x87",  // 中文
                                 "\xf0\x9f\x98\x80"};         // emoji
  std::mt19937 rng(seed);
  std::string out;
  while (out.size() < bytes) out += kAtoms[rng() % (sizeof(kAtoms) / sizeof(kAtoms[0]))];
  return out;
}

std::map<std::string, int64_t> as_map(const PieceCounts& c) {
  return std::map<std::string, int64_t>(c.pieces.begin(), c.pieces.end());
}

PieceCounts counts_of(const std::vector<std::pair<std::string, int64_t>>& pieces) {
  PieceCounts c;
  c.pieces = pieces;
  std::sort(c.pieces.begin(), c.pieces.end());
  for (const auto& [p, n] : pieces) {
    c.total += n;
    c.bytes_seen += static_cast<int64_t>(p.size()) * n;
  }
  return c;
}

// From-scratch BPE with the trainer's rules: every step recounts all pairs, takes the largest count
// (ties: smallest (left bytes, right bytes)), never merges a pair twice, reuses ids of existing bytes.
BpeTrainResult reference_bpe(const PieceCounts& counts, int vocab_size, int min_frequency, int specials) {
  BpeTrainResult r;
  std::map<std::string, int32_t> id_of;
  for (int i = 0; i < 256; ++i) {
    r.token_bytes.emplace_back(1, static_cast<char>(i));
    id_of[r.token_bytes.back()] = i;
  }
  std::vector<std::vector<int32_t>> words;
  for (const auto& [p, n] : counts.pieces) {
    words.emplace_back();
    for (unsigned char c : p) words.back().push_back(c);
  }
  std::set<std::pair<int32_t, int32_t>> done;
  while (static_cast<int>(r.token_bytes.size()) + specials < vocab_size) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pc;
    for (size_t w = 0; w < words.size(); ++w)
      for (size_t i = 0; i + 1 < words[w].size(); ++i) pc[{words[w][i], words[w][i + 1]}] += counts.pieces[w].second;
    bool found = false;
    std::pair<int32_t, int32_t> best;
    int64_t best_n = 0;
    for (const auto& [pair, n] : pc) {
      if (done.count(pair) || n < min_frequency) continue;
      auto key = [&](std::pair<int32_t, int32_t> q) {
        return std::make_pair(r.token_bytes[q.first], r.token_bytes[q.second]);
      };
      if (!found || n > best_n || (n == best_n && key(pair) < key(best))) {
        found = true;
        best = pair;
        best_n = n;
      }
    }
    if (!found) break;
    done.insert(best);
    r.merges.emplace_back(r.token_bytes[best.first], r.token_bytes[best.second]);
    const std::string joined = r.token_bytes[best.first] + r.token_bytes[best.second];
    int32_t id;
    if (id_of.count(joined)) {
      id = id_of[joined];
    } else {
      id = static_cast<int32_t>(r.token_bytes.size());
      r.token_bytes.push_back(joined);
      id_of[joined] = id;
    }
    for (auto& s : words) {
      std::vector<int32_t> t;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == best.first && s[i + 1] == best.second) {
          t.push_back(id);
          i += 2;
        } else {
          t.push_back(s[i++]);
        }
      }
      s = t;
    }
  }
  return r;
}

BpeTrainerOptions options_for(int vocab, int min_frequency = 2, int threads = 1) {
  BpeTrainerOptions o;
  o.vocab_size = vocab;
  o.min_frequency = min_frequency;
  o.threads = threads;
  return o;
}

// The first ~max_bytes of the shared Brown corpus, cut at a newline; "" when absent.
std::string brown_prefix(size_t max_bytes) {
  const std::string shared = tt::test::shared_dir();
  if (shared.empty()) return "";
  const std::string path = shared + "/data/corpus/brown.txt";
  if (!std::filesystem::exists(path)) return "";
  std::string text = read_file(path);
  if (text.size() > max_bytes) text.resize(text.rfind('\n', max_bytes) + 1);
  return text;
}

TEST(BpeTrainer, FirstMergesOnHandMadeCorpus) {
  // "aaab aaab aaab" -> pieces "aaab" x1, " aaab" x2. Pair counts: (a,a) 6, (a,b) 3, (' ',a) 2.
  // 1. (a,a) 6 -> words "aa a b": (aa,a) 3, (a,b) 3, (' ',aa) 2.
  // 2. tie at 3: (a,b) wins, since "a" < "aa" -> words "aa ab": (aa,ab) 3, (' ',aa) 2.
  // 3. (aa,ab) 3 -> "aaab".   4. (' ',aaab) 2 -> " aaab".   Then no pair is left.
  TempDir dir;
  write_file(dir.file("a.txt"), "aaab aaab aaab");
  const BpeTrainResult r = train_bpe({dir.file("a.txt")}, options_for(300));
  EXPECT_EQ(r.pieces, 3);
  EXPECT_EQ(r.unique_pieces, 2);
  EXPECT_EQ(r.bytes_seen, 14);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"a", "a"}, {"a", "b"}, {"aa", "ab"}, {" ", "aaab"}};
  EXPECT_EQ(r.merges, expected);
  ASSERT_EQ(r.token_bytes.size(), 260u);
  EXPECT_EQ(r.token_bytes[256], "aa");
  EXPECT_EQ(r.token_bytes[257], "ab");
  EXPECT_EQ(r.token_bytes[258], "aaab");
  EXPECT_EQ(r.token_bytes[259], " aaab");
  EXPECT_EQ(r.vocab_size(), 261);  // stopped early: nothing left to merge

  // min_frequency 3 stops before (' ', aaab), seen twice.
  const BpeTrainResult r3 = train_bpe({dir.file("a.txt")}, options_for(300, 3));
  EXPECT_EQ(r3.merges.size(), 3u);
  // vocab_size caps the merges: 256 + 2 learned + 1 special.
  const BpeTrainResult r2 = train_bpe({dir.file("a.txt")}, options_for(259));
  EXPECT_EQ(r2.merges.size(), 2u);
  EXPECT_EQ(r2.vocab_size(), 259);
}

TEST(BpeTrainer, MatchesFromScratchReference) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    // Small alphabets make long repeats, overlapping pairs ("aaaa") and many tied counts likely.
    const int alphabet = 2 + trial % 4;
    std::vector<std::pair<std::string, int64_t>> pieces;
    std::set<std::string> seen;
    for (int i = 0; i < 40; ++i) {
      std::string p;
      const int len = 1 + static_cast<int>(rng() % 9);
      for (int j = 0; j < len; ++j) p += static_cast<char>('a' + rng() % alphabet);
      if (seen.insert(p).second) pieces.emplace_back(p, 1 + static_cast<int64_t>(rng() % 6));
    }
    const PieceCounts counts = counts_of(pieces);
    const int min_freq = 1 + trial % 3;
    const BpeTrainResult got = train_bpe_on_counts(counts, options_for(256 + 60 + 1, min_freq));
    const BpeTrainResult want = reference_bpe(counts, 256 + 60 + 1, min_freq, 1);
    ASSERT_EQ(got.merges, want.merges) << "trial " << trial;
    ASSERT_EQ(got.token_bytes, want.token_bytes) << "trial " << trial;
  }
}

TEST(BpeTrainer, CountsDoNotDependOnChunkingOrThreads) {
  TempDir dir;
  const std::string text = tricky_text(200000, 3) + english_like(100000, 4);
  write_file(dir.file("t.txt"), text);
  // Reference: the Pretokenizer over the whole text (no special tokens).
  std::map<std::string, int64_t> whole;
  for (std::string_view p : Pretokenizer().split(text)) ++whole[std::string(p)];

  for (size_t block : {size_t(64), size_t(1000), size_t(1) << 20}) {
    for (size_t chunk : {size_t(7), size_t(100), size_t(1) << 20}) {
      for (int threads : {1, 3}) {
        TextScanOptions scan;
        scan.block_bytes = block;
        scan.chunk_bytes = chunk;
        scan.threads = threads;
        const PieceCounts c = count_pieces({dir.file("t.txt")}, {}, scan);
        EXPECT_EQ(as_map(c), whole) << "block " << block << " chunk " << chunk << " threads " << threads;
        EXPECT_EQ(c.bytes_seen, static_cast<int64_t>(text.size()));
      }
    }
  }
}

TEST(BpeTrainer, SpecialTokensAreCutOutOfTheText) {
  TempDir dir;
  write_file(dir.file("t.txt"), "hello<|endoftext|>hello<|endoftext|><|endoftext|>hello world");
  TextScanOptions scan;
  const PieceCounts c = count_pieces({dir.file("t.txt")}, {"<|endoftext|>"}, scan);
  const std::map<std::string, int64_t> expected = {{"hello", 3}, {" world", 1}};
  EXPECT_EQ(as_map(c), expected);
}

// Trains with the given options, writes to dir, and returns the loaded tokenizer.
BpeTokenizer train_and_load(const std::vector<std::string>& inputs, const BpeTrainerOptions& o,
                            const std::string& dir) {
  const BpeTrainResult r = train_bpe(inputs, o);
  write_bpe_tokenizer(dir, r);
  return BpeTokenizer::load(dir);
}

void expect_round_trip(const BpeTokenizer& tok, const std::string& text) {
  ASSERT_EQ(tok.decode(tok.encode(text)), text);
}

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

TEST(BpeTrainer, WrittenTokenizerLoadsRoundTripsAndCompresses) {
  TempDir dir;
  const std::string text = english_like(300000, 1);
  write_file(dir.file("train.txt"), text);
  const BpeTokenizer tok = train_and_load({dir.file("train.txt")}, options_for(1000, 2, 2), dir.file("tok"));
  EXPECT_EQ(tok.vocab_size(), 1000);
  EXPECT_EQ(tok.eot_id(), 999u);
  EXPECT_EQ(tok.special_token_id("<|endoftext|>"), std::optional<uint32_t>(999));
  expect_round_trip(tok, text);
  expect_round_trip(tok, random_bytes(5000, 2));
  expect_round_trip(tok, tricky_text(5000, 5));
  const double tokens_per_byte = double(tok.encode(text).size()) / text.size();
  EXPECT_LT(tokens_per_byte, 0.3);
}

TEST(BpeTrainer, BrownCorpusCompresses) {
  const std::string text = brown_prefix(1 << 20);
  if (text.empty()) GTEST_SKIP() << "../shared/data/corpus/brown.txt not found";
  TempDir dir;
  write_file(dir.file("brown.txt"), text);
  const BpeTokenizer tok = train_and_load({dir.file("brown.txt")}, options_for(1000, 2, 2), dir.file("tok"));
  EXPECT_EQ(tok.vocab_size(), 1000);
  EXPECT_EQ(tok.eot_id(), 999u);
  expect_round_trip(tok, text);
  expect_round_trip(tok, random_bytes(20000, 9));
  const double tokens_per_byte = double(tok.encode(text).size()) / text.size();
  EXPECT_LT(tokens_per_byte, 0.5);
}

TEST(BpeTrainer, FilesAreIdenticalForOneAndTwoThreads) {
  TempDir dir;
  std::string text = brown_prefix(1 << 20);
  if (text.empty()) text = english_like(1 << 20, 11);
  text += tricky_text(50000, 12);
  write_file(dir.file("train.txt"), text);
  for (int threads : {1, 2}) {
    const BpeTrainResult r = train_bpe({dir.file("train.txt")}, options_for(2000, 2, threads));
    write_bpe_tokenizer(dir.file("t" + std::to_string(threads)), r);
  }
  for (const char* f : {"/encoder.json", "/vocab.bpe"})
    EXPECT_EQ(read_file(dir.file("t1") + f), read_file(dir.file("t2") + f)) << f;
}

TEST(BpeTrainer, DirectoriesAndJsonl) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("in/sub"));
  write_file(dir.file("in/b.txt"), "hello hello\n");
  write_file(dir.file("in/sub/a.jsonl"), "{\"text\": \"world world\", \"id\": 1}\n\n{\"text\": \"hello\\nthere\"}\n");
  write_file(dir.file("in/skip.md"), "ignored ignored");
  const std::vector<std::string> files = list_training_files({dir.file("in")});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], dir.file("in/b.txt"));
  EXPECT_EQ(files[1], dir.file("in/sub/a.jsonl"));
  const PieceCounts c = count_pieces(files, {"<|endoftext|>"}, TextScanOptions());
  const std::map<std::string, int64_t> expected = {{"hello", 2}, {" hello", 1}, {"\n", 2},
                                                   {"world", 1}, {" world", 1}, {"there", 1}};
  EXPECT_EQ(as_map(c), expected);
  EXPECT_EQ(c.bytes_seen, 12 + 11 + 11);

  write_file(dir.file("bad.jsonl"), "{\"text\": \"ok\"}\n{\"txt\": \"no\"}\n");
  try {
    count_pieces({dir.file("bad.jsonl")}, {}, TextScanOptions());
    FAIL() << "expected a kData error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(e.where().find("bad.jsonl:2"), std::string::npos) << e.where();
  }
}

ErrorKind train_error(const std::vector<std::string>& inputs, const BpeTrainerOptions& o) {
  try {
    train_bpe(inputs, o);
  } catch (const Error& e) {
    EXPECT_FALSE(e.hint().empty() && e.where().empty()) << e.what();
    return e.kind();
  }
  ADD_FAILURE() << "expected an error";
  return ErrorKind::kInternal;
}

TEST(BpeTrainer, BadInputIsAnError) {
  TempDir dir;
  write_file(dir.file("empty.txt"), "");
  write_file(dir.file("ok.txt"), "some text some text");
  std::filesystem::create_directories(dir.file("nothing"));
  EXPECT_EQ(train_error({dir.file("missing.txt")}, options_for(300)), ErrorKind::kData);
  EXPECT_EQ(train_error({dir.file("empty.txt")}, options_for(300)), ErrorKind::kData);
  EXPECT_EQ(train_error({dir.file("nothing")}, options_for(300)), ErrorKind::kData);
  EXPECT_EQ(train_error({}, options_for(300)), ErrorKind::kUsage);
  EXPECT_EQ(train_error({dir.file("ok.txt")}, options_for(257)), ErrorKind::kUsage);  // 256 + eot, no merge
  EXPECT_EQ(train_error({dir.file("ok.txt")}, options_for(300, 0)), ErrorKind::kUsage);
  BpeTrainerOptions no_special = options_for(257);
  no_special.special_tokens.clear();
  EXPECT_NO_THROW(train_bpe({dir.file("ok.txt")}, no_special));
}

// ---- the CLI --------------------------------------------------------------------------------------

using test::data_error_kind;
using test::DataCommandRun;
using test::run_data;

TEST(TrainTokenizerCommand, TrainsWritesAndReports) {
  TempDir dir;
  write_file(dir.file("a.txt"), english_like(100000, 21));
  write_file(dir.file("b.txt"), english_like(50000, 22));
  const DataCommandRun r = run_data({"train-tokenizer", "--input", dir.file("a.txt"), dir.file("b.txt"), "--vocab-size",
                                     "600", "--out", dir.file("tok"), "--threads", "2"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("counting pieces"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merging:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vocab: 600 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/byte"), std::string::npos) << r.out;
  const BpeTokenizer tok = BpeTokenizer::load(dir.file("tok"));
  EXPECT_EQ(tok.vocab_size(), 600);
  EXPECT_EQ(tok.eot_id(), 599u);

  EXPECT_EQ(run_data({"train-tokenizer", "--help"}).rc, 0);
  EXPECT_EQ(data_error_kind({"train-tokenizer", "--vocab-size", "600", "--out", dir.file("x")}), ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind({"train-tokenizer", "--input", dir.file("a.txt"), "--out", dir.file("x")}),
            ErrorKind::kUsage);
  EXPECT_EQ(
      data_error_kind({"train-tokenizer", "--input", dir.file("a.txt"), "--vocab-size", "257", "--out", dir.file("x")}),
      ErrorKind::kUsage);
  EXPECT_EQ(data_error_kind(
                {"train-tokenizer", "--input", dir.file("nope.txt"), "--vocab-size", "600", "--out", dir.file("x")}),
            ErrorKind::kData);
  EXPECT_EQ(data_error_kind({"train-tokenizer", "--input", dir.file("a.txt"), "--vocab-size", "600", "--out",
                             dir.file("x"), "--bogus"}),
            ErrorKind::kUsage);
}

}  // namespace
}  // namespace tt::data
