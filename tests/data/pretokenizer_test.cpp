// GPT-2 pre-tokenization: the pattern's alternatives, tiktoken's whitespace and Unicode tables,
// invalid UTF-8, the incremental form, long inputs and concurrent use.
#include "data/pretokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tt::data {
namespace {

std::vector<std::string> pieces(const std::string& text) {
  static const Pretokenizer pre;
  std::vector<std::string> out;
  for (std::string_view p : pre.split(text)) out.emplace_back(p);
  return out;
}

using V = std::vector<std::string>;

TEST(Pretokenizer, WordsNumbersPunctuation) {
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pieces("abc123 4567!!?x"), (V{"abc", "123", " 4567", "!!?", "x"}));
  EXPECT_EQ(pieces(""), V{});
}

TEST(Pretokenizer, Contractions) {
  EXPECT_EQ(pieces("I'm don't they'll we've she'd it's you're"),
            (V{"I", "'m", " don", "'t", " they", "'ll", " we", "'ve", " she", "'d", " it", "'s", " you", "'re"}));
  // Case-sensitive, as in GPT-2: 'S is punctuation followed by a letter.
  EXPECT_EQ(pieces("IT'S"), (V{"IT", "'", "S"}));
}

TEST(Pretokenizer, WhitespaceLookahead) {
  EXPECT_EQ(pieces("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(pieces("x   "), (V{"x", "   "}));
  EXPECT_EQ(pieces("  \n\n hi"), (V{"  \n\n", " hi"}));
  // A run before a non-space keeps its last character apart: \s+(?!\S) backtracks by one.
  EXPECT_EQ(pieces("a\n\nb"), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(pieces("a \tb"), (V{"a", " ", "\t", "b"}));
}

TEST(Pretokenizer, WhitespaceIsUnicodeWhiteSpace) {
  // U+0085 (NEL) is White_Space (tiktoken), U+180E is not (PCRE2 10.42's \s says it is).
  EXPECT_EQ(pieces("a\xc2\x85"
                   "b"),
            (V{"a", "\xc2\x85", "b"}));
  EXPECT_EQ(pieces("a \xc2\x85 b"), (V{"a", " \xc2\x85", " b"}));
  EXPECT_EQ(pieces("z\xe1\xa0\x8ez"), (V{"z", "\xe1\xa0\x8e", "z"}));
  EXPECT_EQ(pieces("a\xe3\x80\x80"
                   "b"),
            (V{"a", "\xe3\x80\x80", "b"}));  // ideographic space
  // U+001C..U+001F are not White_Space (Python's str.isspace() says they are).
  EXPECT_EQ(pieces("a\x1c"
                   "b"),
            (V{"a", "\x1c", "b"}));
}

TEST(Pretokenizer, UnicodeLettersAndNumbersIncludingUnicode15And16) {
  EXPECT_EQ(pieces("caf\xc3\xa9 \xd0\xbc\xd0\xb8\xd1\x80"), (V{"caf\xc3\xa9", " \xd0\xbc\xd0\xb8\xd1\x80"}));
  EXPECT_EQ(pieces("x\xe2\x85\xa2"
                   "5"),
            (V{"x",
               "\xe2\x85\xa2"
               "5"}));  // U+2162 ROMAN NUMERAL THREE is N
  // U+11F04 KAWI LETTER A (Unicode 15) is a letter and U+11F50 KAWI DIGIT ZERO a number for tiktoken.
  EXPECT_EQ(pieces("x\xf0\x91\xbc\x84y"), (V{"x\xf0\x91\xbc\x84y"}));
  EXPECT_EQ(pieces("1\xf0\x91\xbd\x90 2"), (V{"1\xf0\x91\xbd\x90", " 2"}));
}

TEST(Pretokenizer, InvalidUtf8BecomesItsOwnPieces) {
  EXPECT_EQ(pieces("ab\xff\xfe"
                   "cd"),
            (V{"ab", "\xff\xfe", "cd"}));
  EXPECT_EQ(pieces("\x80"), (V{"\x80"}));
  EXPECT_EQ(pieces("a\xc0\xaf"), (V{"a", "\xc0\xaf"}));  // overlong '/'
  EXPECT_EQ(pieces("x\xe2\x82"), (V{"x", "\xe2\x82"}));  // truncated 3-byte sequence at the end
  EXPECT_EQ(pieces(std::string("a\0b", 3)), (V{"a", std::string(1, '\0'), "b"}));
}

TEST(Pretokenizer, PiecesTileRandomBytes) {
  std::mt19937 rng(7);
  const Pretokenizer pre;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) {
      const unsigned r = rng() % 10;
      c = r < 4 ? "ab 1'\n\t.!"[rng() % 9] : static_cast<char>(rng());
    }
    std::vector<std::string_view> ps;
    pre.split(text, ps);
    std::string joined;
    for (std::string_view p : ps) {
      ASSERT_FALSE(p.empty());
      ASSERT_EQ(p.data(), text.data() + joined.size()) << "pieces are views into the text, in order";
      joined.append(p);
    }
    ASSERT_EQ(joined, text);
    // The incremental form gives the same pieces for any batch size.
    std::vector<std::string_view> inc;
    for (size_t pos = 0; pos < text.size();) pos = pre.split(text, pos, 1 + trial % 5, inc);
    ASSERT_EQ(inc, ps);
  }
}

TEST(Pretokenizer, LongRunsAreSinglePieces) {
  const size_t n = 4 << 20;
  EXPECT_EQ(pieces(std::string(n, ' ')).size(), 1u);
  EXPECT_EQ(pieces(std::string(n, 'a')).size(), 1u);
  EXPECT_EQ(pieces(std::string(n, '!')).size(), 1u);
  EXPECT_EQ(pieces(std::string(n, ' ') + "x"), (V{std::string(n - 1, ' '), " x"}));
}

TEST(Pretokenizer, ConcurrentSplitsAgree) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "Line " + std::to_string(i) + ": it's  caf\xc3\xa9\xff!\n";
  const Pretokenizer pre;
  const auto expected = pre.split(text);
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool same = true;
      for (int r = 0; r < 20; ++r) same = same && pre.split(text) == expected;
      ok[t] = same;
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

}  // namespace
}  // namespace tt::data
