// Tests for data/synth.h: determinism, exact entropies against closed forms and long samples, the
// window-floor convention, the alphabet codec, and the files synth_write produces.
#include "data/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "data/shard.h"
#include "tests/test_util.h"

namespace tt::data {
namespace {

using tt::test::TempDir;

double binary_entropy(double p) { return -(p * std::log(p) + (1 - p) * std::log(1 - p)); }

TEST(SynthAlphabetTest, PrintableDistinctAndPrefixes) {
  const std::string full = synth_alphabet(kMaxSynthVocab);
  ASSERT_EQ(full.size(), 73u);
  std::set<char> seen(full.begin(), full.end());
  EXPECT_EQ(seen.size(), full.size());
  for (char c : full) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7F) << int(c);
    EXPECT_NE(c, '"');
    EXPECT_NE(c, '\\');
  }
  EXPECT_EQ(synth_alphabet(32), full.substr(0, 32));
  EXPECT_EQ(synth_alphabet(2), " e");
  EXPECT_THROW(synth_alphabet(1), Error);
  EXPECT_THROW(synth_alphabet(74), Error);
}

TEST(SynthAlphabetTest, EncodeDecodeRoundTrip) {
  const std::string a = synth_alphabet(40);
  const std::string text = "the rain in spain. Tea, oil";
  std::vector<int32_t> ids = encode_chars(a, text);
  ASSERT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[0], static_cast<int32_t>(a.find('t')));
  EXPECT_EQ(ids[3], 0);  // ' ' is token 0
  EXPECT_EQ(decode_chars(a, ids), text);
  std::vector<uint32_t> uids(ids.begin(), ids.end());
  EXPECT_EQ(decode_chars(a, uids), text);
}

TEST(SynthAlphabetTest, EncodeNamesFirstUnknownCharacter) {
  const std::string a = synth_alphabet(10);  // " etaoinshr"
  try {
    encode_chars(a, "the zoo");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(msg.find("'z'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("position 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find(a), std::string::npos) << msg;  // the hint lists the alphabet
  }
  EXPECT_THROW(decode_chars(a, std::vector<int32_t>{0, 10}), Error);
  EXPECT_THROW(decode_chars(a, std::vector<int32_t>{-1}), Error);
}

TEST(SynthTest, SameSeedSameTokensDifferentSeedDifferent) {
  SynthSpec spec;
  spec.num_tokens = 5000;
  SynthResult a = synth_generate(spec);
  SynthResult b = synth_generate(spec);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.chain.transitions(), b.chain.transitions());
  ASSERT_EQ(a.tokens.size(), 5000u);
  for (uint32_t t : a.tokens) ASSERT_LT(t, 32u);

  SynthSpec other = spec;
  other.seed = 2;
  SynthResult c = synth_generate(other);
  EXPECT_NE(a.tokens, c.tokens);
  EXPECT_NE(a.chain.transitions(), c.chain.transitions());

  SynthSpec stream2 = spec;
  stream2.stream = 2;  // same chain, independent sample stream
  SynthResult d = synth_generate(stream2);
  EXPECT_EQ(a.chain.transitions(), d.chain.transitions());
  EXPECT_NE(a.tokens, d.tokens);
  EXPECT_THROW(synth_generate(SynthSpec{32, 2, 1, 8.0, 10, 0}), Error);  // stream 0 is the table's
}

// Pins the corpus of the default spec: a change here changes every synthetic corpus ever written.
TEST(SynthTest, GoldenTokensForDefaultSpec) {
  SynthSpec spec;
  spec.num_tokens = 24;
  SynthResult r = synth_generate(spec);
  EXPECT_EQ(decode_chars(r.alphabet, r.tokens), "firkxkjrydi.l.akwpbcqvbu");
}

TEST(SynthTest, StationaryDistributionIsExact) {
  SynthSpec spec;
  spec.vocab = 6;
  spec.order = 3;
  spec.concentration = 6;
  MarkovChain chain = MarkovChain::from_spec(spec);
  const auto& pi = chain.stationary();
  ASSERT_EQ(static_cast<int64_t>(pi.size()), chain.num_contexts());
  double total = 0;
  for (double p : pi) {
    EXPECT_GT(p, 0);
    total += p;
  }
  EXPECT_NEAR(total, 1.0, 1e-13);
  std::vector<double> next(pi.size(), 0.0);
  for (int64_t c = 0; c < chain.num_contexts(); ++c)
    for (int j = 0; j < chain.vocab(); ++j) next[chain.shift(c, j)] += pi[c] * chain.prob(c, j);
  for (size_t c = 0; c < pi.size(); ++c) EXPECT_NEAR(next[c], pi[c], 1e-13);
  // Stationarity: the first n tokens of a context are distributed like the last n.
  for (int n = 1; n < chain.order(); ++n) {
    const int64_t m = static_cast<int64_t>(std::pow(chain.vocab(), n));
    const int64_t div = chain.num_contexts() / m;
    std::vector<double> first(m, 0.0), last(m, 0.0);
    for (int64_t c = 0; c < chain.num_contexts(); ++c) {
      first[c / div] += pi[c];
      last[c % m] += pi[c];
    }
    for (int64_t i = 0; i < m; ++i) EXPECT_NEAR(first[i], last[i], 1e-12);
  }
}

// Order 1, V = 2, P = [[1-a, a], [b, 1-b]]: pi = (b, a) / (a + b), H = pi0 h(a) + pi1 h(b).
TEST(SynthTest, TwoStateChainMatchesClosedForm) {
  const double a = 0.2, b = 0.4;
  MarkovChain chain(2, 1, {1 - a, a, b, 1 - b});
  EXPECT_NEAR(chain.stationary()[0], b / (a + b), 1e-12);
  EXPECT_NEAR(chain.stationary()[1], a / (a + b), 1e-12);
  const double h = (b / (a + b)) * binary_entropy(a) + (a / (a + b)) * binary_entropy(b);
  EXPECT_NEAR(chain.entropy_rate(), h, 1e-12);
  EXPECT_NEAR(chain.conditional_entropy(0), binary_entropy(a / (a + b)), 1e-12);
  EXPECT_NEAR(chain.conditional_entropy(1), h, 1e-12);
  // Order 1: every prediction (the first sees one token) is at the entropy rate.
  for (int64_t t : {1, 2, 7, 64, 1024}) EXPECT_NEAR(chain.window_floor(t), h, 1e-12);
}

// Order 2 whose next token depends only on the OLDER context token: P(x2 | x0, x1) = Q(x2 | x0).
// Even and odd positions are then two independent stationary Q-chains, so
//   h[1] = H(X1 | X0) = H(pi_Q) (X1 is independent of X0), h[2] = H = sum_x pi_Q(x) H(Q(.|x)),
//   floor(T) = (H(pi_Q) + (T - 1) H) / T.
TEST(SynthTest, InterleavedChainWindowFloorMatchesClosedForm) {
  const double q01 = 0.1, q10 = 0.3;  // Q = [[0.9, 0.1], [0.3, 0.7]], pi_Q = (0.75, 0.25)
  std::vector<double> table;
  for (int x0 = 0; x0 < 2; ++x0)
    for (int x1 = 0; x1 < 2; ++x1) {
      if (x0 == 0)
        table.insert(table.end(), {1 - q01, q01});
      else
        table.insert(table.end(), {q10, 1 - q10});
    }
  MarkovChain chain(2, 2, table);
  const double pi0 = 0.75;
  for (int x0 = 0; x0 < 2; ++x0)
    for (int x1 = 0; x1 < 2; ++x1)
      EXPECT_NEAR(chain.stationary()[x0 * 2 + x1], (x0 ? 1 - pi0 : pi0) * (x1 ? 1 - pi0 : pi0), 1e-12);
  const double h_marginal = binary_entropy(pi0);
  const double h_rate = pi0 * binary_entropy(q01) + (1 - pi0) * binary_entropy(q10);
  EXPECT_NEAR(chain.conditional_entropy(0), h_marginal, 1e-12);
  EXPECT_NEAR(chain.conditional_entropy(1), h_marginal, 1e-12);
  EXPECT_NEAR(chain.conditional_entropy(2), h_rate, 1e-12);
  EXPECT_NEAR(chain.conditional_entropy(9), h_rate, 1e-12);
  EXPECT_NEAR(chain.block_entropy(2), 2 * h_marginal, 1e-12);
  for (int64_t t : {1, 2, 3, 32, 256})
    EXPECT_NEAR(chain.window_floor(t), (h_marginal + (t - 1) * h_rate) / t, 1e-12) << "T=" << t;
  EXPECT_NEAR(window_floor_from_conditional(chain.conditional_entropies(), 32), chain.window_floor(32), 1e-15);
}

TEST(SynthTest, PeriodicChainStillSolves) {
  MarkovChain chain(2, 1, {0, 1, 1, 0});  // deterministic alternation: period 2
  EXPECT_NEAR(chain.stationary()[0], 0.5, 1e-12);
  EXPECT_NEAR(chain.entropy_rate(), 0.0, 1e-12);
  EXPECT_NEAR(chain.conditional_entropy(0), std::log(2.0), 1e-12);
}

TEST(SynthTest, ExplicitTableValidation) {
  EXPECT_THROW(MarkovChain(2, 1, {0.5, 0.5, 1.0}), Error);        // wrong size
  EXPECT_THROW(MarkovChain(2, 1, {0.5, 0.6, 0.5, 0.5}), Error);   // row sums to 1.1
  EXPECT_THROW(MarkovChain(2, 1, {-0.5, 1.5, 0.5, 0.5}), Error);  // negative
  EXPECT_THROW(MarkovChain(2, 0, {1.0, 0.0}), Error);             // order 0
  SynthSpec big;
  big.vocab = 73;
  big.order = 4;
  try {
    MarkovChain::from_spec(big);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("lower --vocab or --order"), std::string::npos) << e.what();
  }
  SynthSpec neg;
  neg.concentration = -1;
  EXPECT_THROW(MarkovChain::from_spec(neg), Error);
}

TEST(SynthTest, EntropyRateMatchesLongSample) {
  SynthSpec spec;
  spec.vocab = 4;
  spec.order = 2;
  spec.seed = 7;
  spec.concentration = 4;
  spec.num_tokens = 2000000;
  SynthResult r = synth_generate(spec);
  const MarkovChain& chain = r.chain;
  const int V = chain.vocab();
  // Plug-in empirical conditional entropy H(X_t | X_{t-2}, X_{t-1}) from counts.
  std::vector<double> counts(chain.num_contexts() * V, 0.0), ctx_counts(chain.num_contexts(), 0.0);
  double cross_entropy = 0;
  int64_t ctx = r.tokens[0] * V + r.tokens[1];
  for (size_t i = 2; i < r.tokens.size(); ++i) {
    counts[ctx * V + r.tokens[i]] += 1;
    ctx_counts[ctx] += 1;
    cross_entropy -= std::log(chain.prob(ctx, static_cast<int>(r.tokens[i])));
    ctx = chain.shift(ctx, static_cast<int>(r.tokens[i]));
  }
  const double n = static_cast<double>(r.tokens.size() - 2);
  double empirical = 0;
  for (int64_t c = 0; c < chain.num_contexts(); ++c)
    for (int j = 0; j < V; ++j) {
      double k = counts[c * V + j];
      if (k > 0) empirical -= (k / n) * std::log(k / ctx_counts[c]);
    }
  cross_entropy /= n;
  EXPECT_NEAR(empirical, chain.entropy_rate(), 3e-3);
  EXPECT_NEAR(cross_entropy, chain.entropy_rate(), 3e-3);
  // Context frequencies follow the stationary distribution.
  for (int64_t c = 0; c < chain.num_contexts(); ++c) EXPECT_NEAR(ctx_counts[c] / n, chain.stationary()[c], 3e-3);
  // And the unigram frequencies give h[0].
  std::vector<double> uni(V, 0.0);
  for (uint32_t t : r.tokens) uni[t] += 1;
  double h0 = 0;
  for (double u : uni) h0 -= (u / r.tokens.size()) * std::log(u / r.tokens.size());
  EXPECT_NEAR(h0, chain.conditional_entropy(0), 3e-3);
}

TEST(SynthTest, DefaultChainCrossEntropyMatchesRate) {
  SynthSpec spec;  // V = 32, k = 2
  spec.num_tokens = 1000000;
  SynthResult r = synth_generate(spec);
  double ce = 0;
  int64_t ctx = r.tokens[0] * 32 + r.tokens[1];
  for (size_t i = 2; i < r.tokens.size(); ++i) {
    ce -= std::log(r.chain.prob(ctx, static_cast<int>(r.tokens[i])));
    ctx = r.chain.shift(ctx, static_cast<int>(r.tokens[i]));
  }
  EXPECT_NEAR(ce / double(r.tokens.size() - 2), r.chain.entropy_rate(), 5e-3);
}

TEST(SynthTest, WindowFloorMonotoneAndConvergesToRate) {
  for (int order = 1; order <= 4; ++order) {
    SynthSpec spec;
    spec.vocab = 5;
    spec.order = order;
    spec.concentration = 8;
    MarkovChain chain = MarkovChain::from_spec(spec);
    for (int c = 1; c <= order; ++c) EXPECT_LE(chain.conditional_entropy(c), chain.conditional_entropy(c - 1) + 1e-12);
    EXPECT_LE(chain.conditional_entropy(0), std::log(5.0) + 1e-12);
    EXPECT_NEAR(chain.window_floor(1), chain.conditional_entropy(1), 1e-12);  // first target sees 1 token
    double prev = chain.window_floor(1);
    for (int64_t t = 2; t <= 300; ++t) {
      double f = chain.window_floor(t);
      EXPECT_LE(f, prev + 1e-12) << "order " << order << " T=" << t;
      EXPECT_GE(f, chain.entropy_rate() - 1e-12);
      prev = f;
    }
    EXPECT_NEAR(chain.window_floor(10000000), chain.entropy_rate(), 1e-6);
    // Direct sum of the documented formula.
    const int64_t t = 37;
    double sum = 0;
    for (int64_t i = 0; i < t; ++i) sum += chain.conditional_entropy(static_cast<int>(std::min<int64_t>(i + 1, order)));
    EXPECT_NEAR(chain.window_floor(t), sum / t, 1e-12);
  }
}

TEST(SynthWriteTest, WritesShardsAndManifest) {
  TempDir dir;
  SynthSpec spec;
  spec.vocab = 20;
  spec.order = 3;
  spec.seed = 42;
  spec.concentration = 5.5;
  const std::string out = dir.file("corpus/nested");
  synth_write(spec, out, 3000, 700);

  ShardReader train(out + "/train.bin"), val(out + "/val.bin");
  EXPECT_EQ(train.width(), TokenWidth::kUint16);
  EXPECT_EQ(train.num_tokens(), 3000);
  EXPECT_EQ(val.num_tokens(), 700);
  SynthSpec gen = spec;
  gen.num_tokens = 3000;
  SynthResult expect = synth_generate(gen);  // train is stream 1
  for (int64_t i = 0; i < 3000; ++i) ASSERT_EQ(train.token(i), expect.tokens[i]);
  gen.stream = 2;
  gen.num_tokens = 700;
  SynthResult expect_val = synth_generate(gen);
  int same = 0;
  for (int64_t i = 0; i < 700; ++i) {
    ASSERT_EQ(val.token(i), expect_val.tokens[i]);
    same += val.token(i) == train.token(i);
  }
  EXPECT_LT(same, 300);  // independent streams

  EXPECT_EQ(find_synth_manifest(out + "/train.bin"), out + "/synth.json");
  SynthManifest m = read_synth_manifest(out + "/synth.json");
  EXPECT_EQ(m.vocab, 20);
  EXPECT_EQ(m.order, 3);
  EXPECT_EQ(m.seed, 42u);
  EXPECT_DOUBLE_EQ(m.concentration, 5.5);
  EXPECT_EQ(m.alphabet, synth_alphabet(20));
  EXPECT_EQ(m.train_tokens, 3000);
  EXPECT_EQ(m.val_tokens, 700);
  EXPECT_DOUBLE_EQ(m.entropy_rate_nats, expect.chain.entropy_rate());
  ASSERT_EQ(m.conditional_entropy_nats.size(), 4u);
  for (int c = 0; c <= 3; ++c) EXPECT_DOUBLE_EQ(m.conditional_entropy_nats[c], expect.chain.conditional_entropy(c));
  for (int64_t t : {32, 64, 128, 256}) EXPECT_NEAR(m.window_floor(t), expect.chain.window_floor(t), 1e-15);
  const std::string json = tt::test::read_file(out + "/synth.json");
  EXPECT_NE(json.find("\"window_floor_nats\""), std::string::npos);
  EXPECT_NE(json.find("\"256\""), std::string::npos);

  // Rewriting is deterministic.
  const std::string before = tt::test::read_file(out + "/train.bin");
  synth_write(spec, out, 3000, 700);
  EXPECT_EQ(tt::test::read_file(out + "/train.bin"), before);
}

TEST(SynthWriteTest, ManifestErrors) {
  TempDir dir;
  EXPECT_EQ(find_synth_manifest(dir.file("train.bin")), "");
  EXPECT_THROW(read_synth_manifest(dir.file("synth.json")), Error);
  tt::test::write_file(dir.file("synth.json"), "{\"vocab\": 3,");
  try {
    read_synth_manifest(dir.file("synth.json"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kData);
    EXPECT_NE(std::string(e.what()).find("synth.json"), std::string::npos);
  }
  tt::test::write_file(dir.file("synth.json"), "{\"vocab\": 3}");
  EXPECT_THROW(read_synth_manifest(dir.file("synth.json")), Error);
}

}  // namespace
}  // namespace tt::data
