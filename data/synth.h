// Built-in synthetic corpus: a seeded order-k Markov chain over a small alphabet of printable
// characters, written as llm.c shards, with its exact entropy rate and per-window loss floor.
// Design: the corpus is a known distribution, so a training run on it has a precise target: a model
// that learns the chain reaches window_floor(T) nats of validation loss and nothing reaches lower.
// Every number (transition table, samples) comes from our own generator (tt::Rng, splitmix64) and
// plain arithmetic, never std:: distributions, so the same seed gives the same corpus with any
// standard library. Tokens map 1:1 to characters (token i <-> alphabet[i]) so samples print as text.
//
// Conventions used throughout (h, floor):
//   Context of order k: the k previous tokens (x_0 .. x_{k-1}, oldest first), encoded as the base-V
//   number sum_i x_i * V^(k-1-i); the transition table holds P(next | context), V^k rows of V.
//   The stream starts in the stationary distribution, so every position is stationary.
//   h[c] = H(X_c | X_0 .. X_{c-1}) in nats for c = 0..k: h[0] = H(X_0) (the marginal), h[k] = H, the
//   entropy rate sum_ctx pi(ctx) H(P(.|ctx)); for c > k, h[c] = H.
//   A training window of T+1 tokens x[0..T] (llm.c style) has inputs x[0..T-1] and targets x[1..T];
//   the prediction of target x[i+1] sees x[0..i], i.e. i+1 tokens of context, so
//     window_floor(T) = (1/T) * sum_{i=0}^{T-1} h[min(i+1, k)]
//   (the first prediction already has one token of context; h[0] never enters). It is the mean
//   cross-entropy of the exact chain over the T predicted positions of a window that starts at a
//   random (stationary) position, non-increasing in T and -> H as T -> infinity.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt::data {

// The printable characters behind synthetic token ids, most useful first; synth_alphabet(V) is the
// first V of them. No quote or backslash, so it embeds in JSON and shell output unescaped.
extern const char kSynthAlphabet[];
constexpr int kMaxSynthVocab = 73;
constexpr int kMaxSynthOrder = 4;
// Upper bound on V^(k+1), the transition table size (32 MiB of doubles).
constexpr int64_t kMaxSynthTableEntries = int64_t(1) << 22;
constexpr double kDefaultSynthConcentration = 8.0;  // V=32, k=2: H ~ 2.21 vs ln 32 ~ 3.47 nats

// The first `vocab` characters of kSynthAlphabet. Throws tt::Error(kConfig) unless 2 <= vocab <= 73.
std::string synth_alphabet(int vocab);

// ids -> characters. Throws tt::Error(kData) naming the first id outside [0, alphabet.size()).
std::string decode_chars(const std::string& alphabet, const int32_t* ids, size_t n);
std::string decode_chars(const std::string& alphabet, const std::vector<int32_t>& ids);
std::string decode_chars(const std::string& alphabet, const std::vector<uint32_t>& ids);
// characters -> ids. Throws tt::Error(kData) naming the first character (and its position) that is
// not in the alphabet, with the alphabet in the hint.
std::vector<int32_t> encode_chars(const std::string& alphabet, const std::string& text);

struct SynthSpec {
  int vocab = 32;     // V, 2..kMaxSynthVocab
  int order = 2;      // k, 1..kMaxSynthOrder
  uint64_t seed = 1;  // picks the transition table (and, with `stream`, the samples)
  // beta in w_j = 1e-3 + u_j^beta (u_j uniform in [0,1), one row per context, then normalised):
  // 0 -> uniform rows; larger -> more peaked rows. The 1e-3 keeps full support (ergodic chain).
  double concentration = kDefaultSynthConcentration;
  int64_t num_tokens = 0;  // synth_generate: how many tokens to sample
  uint64_t stream = 1;     // sample stream >= 1 (0 is reserved for the table); synth_write: 1 train, 2 val
};

// An order-k Markov chain over V tokens with its stationary distribution and entropies computed at
// construction. Immutable afterwards, so const methods are thread-safe.
class MarkovChain {
 public:
  // The seeded random chain of `spec` (vocab, order, seed, concentration). Throws tt::Error(kConfig)
  // for out-of-range parameters or a table over kMaxSynthTableEntries.
  static MarkovChain from_spec(const SynthSpec& spec);

  // An explicit table: V^k rows (contexts, encoded as in the file comment) of V probabilities,
  // row-major. Rows must be non-negative and sum to 1 within 1e-9 (they are renormalised); the
  // chain must be ergodic (irreducible) for the stationary distribution to be unique.
  // Throws tt::Error(kConfig) when the shape or a row is invalid.
  MarkovChain(int vocab, int order, std::vector<double> transitions);

  int vocab() const { return vocab_; }
  int order() const { return order_; }
  int64_t num_contexts() const { return num_contexts_; }
  double prob(int64_t context, int next) const { return probs_[context * vocab_ + next]; }
  const std::vector<double>& transitions() const { return probs_; }
  // Stationary distribution over the V^k contexts (power iteration to an L1 residual < 1e-14).
  const std::vector<double>& stationary() const { return stationary_; }
  // H(X_0 .. X_{n-1}) in nats for 0 <= n <= k (stationary block entropy).
  double block_entropy(int n) const;
  // h[c] = H(X_c | X_0 .. X_{c-1}) in nats; c > k gives the entropy rate.
  double conditional_entropy(int context_len) const;
  // h[0..k] (h[k] is the entropy rate): the input of window_floor_from_conditional.
  const std::vector<double>& conditional_entropies() const { return conditional_; }
  double entropy_rate() const { return conditional_[order_]; }
  // (1/T) sum_{i=0}^{T-1} h[min(i+1, k)]; T >= 1.
  double window_floor(int64_t seq_len) const;

  // Next context after appending token `next` to `context`.
  int64_t shift(int64_t context, int next) const { return (context % high_) * vocab_ + next; }
  // n tokens from a stream that starts in the stationary distribution, driven by tt::Rng(seed).
  std::vector<uint32_t> sample(int64_t n, uint64_t seed) const;

 private:
  void validate_and_solve();

  int vocab_ = 0;
  int order_ = 0;
  int64_t num_contexts_ = 0;
  int64_t high_ = 1;  // V^(k-1)
  std::vector<double> probs_;
  std::vector<double> stationary_;
  std::vector<double> block_entropy_;  // H_0 .. H_k
  std::vector<double> conditional_;    // h[0] .. h[k]
};

// window_floor from h[0..k] (as stored in synth.json): (1/T) sum_{i=0}^{T-1} h[min(i+1, k)].
double window_floor_from_conditional(const std::vector<double>& h, int64_t seq_len);

// Seed of sample stream `stream` (table = stream 0) for a spec seed.
uint64_t synth_stream_seed(uint64_t seed, uint64_t stream);

struct SynthResult {
  MarkovChain chain;
  std::string alphabet;
  std::vector<uint32_t> tokens;  // spec.num_tokens samples of stream spec.stream
};

SynthResult synth_generate(const SynthSpec& spec);

// Writes out_dir/train.bin (stream 1) and out_dir/val.bin (stream 2) as uint16 llm.c shards, and
// out_dir/synth.json (kSynthManifestName) describing the chain, its entropies and window floors.
// Creates out_dir if needed. Throws tt::Error(kConfig) on a bad spec, kRuntime on I/O failure.
constexpr const char* kSynthManifestName = "synth.json";
void synth_write(const SynthSpec& spec, const std::string& out_dir, int64_t train_tokens, int64_t val_tokens);

// What synth.json holds.
struct SynthManifest {
  int vocab = 0;
  int order = 0;
  uint64_t seed = 0;
  double concentration = 0;
  std::string alphabet;
  double entropy_rate_nats = 0;
  std::vector<double> conditional_entropy_nats;  // h[0..k]
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  double window_floor(int64_t seq_len) const {
    return window_floor_from_conditional(conditional_entropy_nats, seq_len);
  }
};

// Reads synth.json. Throws tt::Error(kData, where=path) when it is missing, malformed, or lacks a field.
SynthManifest read_synth_manifest(const std::string& path);
// Path of synth.json in the directory of `shard_path`, or "" when there is none.
std::string find_synth_manifest(const std::string& shard_path);

}  // namespace tt::data
