// Synthetic Markov corpus: table generation, exact stationary distribution and entropies, sampling,
// and the train/val/manifest writer. Decision: only tt::Rng (splitmix64) and +,*,log,pow feed the
// numbers, so a seed names the same corpus everywhere; exact quantities come from the table itself
// (power iteration + block entropies), never from samples.
#include "data/synth.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/rng.h"
#include "data/shard.h"

namespace tt::data {

const char kSynthAlphabet[] = " etaoinshrdlucmfwypvbgkjqxz.,ETAOINSHRDLUCMFWYPVBGKJQXZ0123456789;:!?'-()";
static_assert(sizeof(kSynthAlphabet) - 1 == kMaxSynthVocab, "kMaxSynthVocab must match the alphabet");

namespace {

constexpr double kWeightFloor = 1e-3;     // eps in w_j = eps + u_j^beta
constexpr double kStationaryTol = 1e-14;  // L1 residual |pi P - pi|
constexpr double kLazyWeight = 0.1;       // pi <- a pi + (1-a) pi P: same fixed point, aperiodic

double plogp_sum(const std::vector<double>& p) {
  double h = 0;
  for (double x : p)
    if (x > 0) h -= x * std::log(x);
  return h;
}

int64_t ipow(int64_t base, int exp) {
  int64_t r = 1;
  for (int i = 0; i < exp; ++i) r *= base;
  return r;
}

void check_shape(int vocab, int order) {
  if (vocab < 2)
    throw Error(ErrorKind::kConfig, str("vocab ", vocab, " is too small"), "synth", "use a vocab of at least 2");
  if (order < 1 || order > kMaxSynthOrder)
    throw Error(ErrorKind::kConfig, str("order ", order, " is outside 1..", kMaxSynthOrder), "synth",
                "pick a Markov order between 1 and 4");
  double entries = std::pow(double(vocab), order + 1);
  if (entries > double(kMaxSynthTableEntries))
    throw Error(ErrorKind::kConfig,
                str("vocab ", vocab, " with order ", order, " needs a table of ", vocab, "^", order + 1, " = ",
                    static_cast<int64_t>(entries), " entries, over the limit of ", kMaxSynthTableEntries),
                "synth", "lower --vocab or --order");
}

std::string fmt_double(double x) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  return buf;
}

}  // namespace

// ---- alphabet -----------------------------------------------------------------------------------

std::string synth_alphabet(int vocab) {
  if (vocab < 2 || vocab > kMaxSynthVocab)
    throw Error(ErrorKind::kConfig, str("synthetic vocab ", vocab, " is outside 2..", kMaxSynthVocab), "synth",
                str("the synthetic alphabet has ", kMaxSynthVocab, " printable characters"));
  return std::string(kSynthAlphabet, static_cast<size_t>(vocab));
}

std::string decode_chars(const std::string& alphabet, const int32_t* ids, size_t n) {
  std::string out(n, '?');
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= alphabet.size())
      throw Error(
          ErrorKind::kData,
          str("token id ", ids[i], " at position ", i, " is outside the alphabet of ", alphabet.size(), " characters"),
          "decode_chars", "the tokens do not come from this synthetic corpus (check its synth.json)");
    out[i] = alphabet[static_cast<size_t>(ids[i])];
  }
  return out;
}

std::string decode_chars(const std::string& alphabet, const std::vector<int32_t>& ids) {
  return decode_chars(alphabet, ids.data(), ids.size());
}

std::string decode_chars(const std::string& alphabet, const std::vector<uint32_t>& ids) {
  std::vector<int32_t> v(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) v[i] = ids[i] > 0x7FFFFFFFu ? -1 : static_cast<int32_t>(ids[i]);
  return decode_chars(alphabet, v);
}

std::vector<int32_t> encode_chars(const std::string& alphabet, const std::string& text) {
  int32_t index[256];
  std::fill(std::begin(index), std::end(index), -1);
  for (size_t i = 0; i < alphabet.size(); ++i) index[static_cast<unsigned char>(alphabet[i])] = static_cast<int32_t>(i);
  std::vector<int32_t> out(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    int32_t id = index[static_cast<unsigned char>(text[i])];
    if (id < 0) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      std::string shown = std::isprint(c) ? str("'", text[i], "'") : str("byte 0x", std::hex, int(c));
      throw Error(ErrorKind::kData, str("character ", shown, " at position ", i, " is not in the alphabet"),
                  "encode_chars", str("the ", alphabet.size(), "-token alphabet is \"", alphabet, "\""));
    }
    out[i] = id;
  }
  return out;
}

// ---- MarkovChain --------------------------------------------------------------------------------

uint64_t synth_stream_seed(uint64_t seed, uint64_t stream) {
  Rng a(seed);
  uint64_t base = a.next_u64();
  Rng b(base ^ (stream * 0xD1B54A32D192ED03ull));
  return b.next_u64();
}

MarkovChain MarkovChain::from_spec(const SynthSpec& spec) {
  synth_alphabet(spec.vocab);  // range check with the alphabet's message
  check_shape(spec.vocab, spec.order);
  if (!(spec.concentration >= 0) || !std::isfinite(spec.concentration))
    throw Error(ErrorKind::kConfig, str("concentration ", spec.concentration, " must be finite and >= 0"), "synth",
                "0 gives uniform transitions; 2..16 give increasingly peaked ones");
  const int64_t contexts = ipow(spec.vocab, spec.order);
  std::vector<double> table(static_cast<size_t>(contexts * spec.vocab));
  Rng rng(synth_stream_seed(spec.seed, 0));
  for (int64_t c = 0; c < contexts; ++c) {
    double* row = &table[static_cast<size_t>(c * spec.vocab)];
    double sum = 0;
    for (int j = 0; j < spec.vocab; ++j) {
      double u = rng.uniform();
      row[j] = kWeightFloor + (spec.concentration == 0 ? 1.0 : std::pow(u, spec.concentration));
      sum += row[j];
    }
    for (int j = 0; j < spec.vocab; ++j) row[j] /= sum;
  }
  return MarkovChain(spec.vocab, spec.order, std::move(table));
}

MarkovChain::MarkovChain(int vocab, int order, std::vector<double> transitions)
    : vocab_(vocab), order_(order), probs_(std::move(transitions)) {
  check_shape(vocab, order);
  num_contexts_ = ipow(vocab, order);
  high_ = ipow(vocab, order - 1);
  validate_and_solve();
}

void MarkovChain::validate_and_solve() {
  const int64_t V = vocab_, C = num_contexts_;
  if (static_cast<int64_t>(probs_.size()) != C * V)
    throw Error(ErrorKind::kConfig, str("transition table has ", probs_.size(), " entries, expected V^(k+1) = ", C * V),
                "synth", "pass V^k rows (contexts) of V probabilities");
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0;
    for (int64_t j = 0; j < V; ++j) {
      double p = probs_[c * V + j];
      if (!(p >= 0) || !std::isfinite(p))
        throw Error(ErrorKind::kConfig, str("transition probability ", p, " in row ", c, " is not a probability"),
                    "synth", "use finite values >= 0");
      sum += p;
    }
    if (std::fabs(sum - 1.0) > 1e-9)
      throw Error(ErrorKind::kConfig, str("row ", c, " of the transition table sums to ", fmt_double(sum)), "synth",
                  "each context's row must sum to 1");
    for (int64_t j = 0; j < V; ++j) probs_[c * V + j] /= sum;
  }

  // Stationary distribution over contexts: lazy power iteration from uniform.
  std::vector<double> pi(static_cast<size_t>(C), 1.0 / double(C)), next(static_cast<size_t>(C));
  const int64_t max_iters = std::max<int64_t>(2000, int64_t(4e9) / (C * V));
  bool converged = false;
  for (int64_t it = 0; it < max_iters && !converged; ++it) {
    std::fill(next.begin(), next.end(), 0.0);
    for (int64_t c = 0; c < C; ++c) {
      const double pc = pi[c];
      const double* row = &probs_[c * V];
      int64_t base = (c % high_) * V;
      for (int64_t j = 0; j < V; ++j) next[base + j] += pc * row[j];
    }
    double residual = 0, total = 0;
    for (int64_t c = 0; c < C; ++c) {
      residual += std::fabs(next[c] - pi[c]);
      pi[c] = kLazyWeight * pi[c] + (1 - kLazyWeight) * next[c];
      total += pi[c];
    }
    for (double& x : pi) x /= total;
    converged = residual < kStationaryTol;
  }
  if (!converged)
    throw Error(ErrorKind::kConfig,
                str("the chain's stationary distribution did not converge in ", max_iters, " iterations"), "synth",
                "the chain mixes too slowly (or is not irreducible); lower --concentration");
  stationary_ = std::move(pi);

  // Block entropies H_n = H(X_0..X_{n-1}) from the stationary context marginals.
  block_entropy_.assign(static_cast<size_t>(order_ + 1), 0.0);
  for (int n = 1; n <= order_; ++n) {
    const int64_t div = ipow(V, order_ - n);
    std::vector<double> marginal(static_cast<size_t>(ipow(V, n)), 0.0);
    for (int64_t c = 0; c < C; ++c) marginal[c / div] += stationary_[c];
    block_entropy_[n] = plogp_sum(marginal);
  }
  conditional_.assign(static_cast<size_t>(order_ + 1), 0.0);
  for (int c = 0; c < order_; ++c) conditional_[c] = block_entropy_[c + 1] - block_entropy_[c];
  double rate = 0;
  std::vector<double> row(static_cast<size_t>(V));
  for (int64_t c = 0; c < C; ++c) {
    row.assign(probs_.begin() + c * V, probs_.begin() + (c + 1) * V);
    rate += stationary_[c] * plogp_sum(row);
  }
  conditional_[order_] = rate;
}

double MarkovChain::block_entropy(int n) const {
  TT_ASSERT(n >= 0 && n <= order_, "block length ", n, " outside 0..", order_);
  return block_entropy_[n];
}

double MarkovChain::conditional_entropy(int context_len) const {
  TT_ASSERT(context_len >= 0, "negative context length");
  return conditional_[std::min(context_len, order_)];
}

double window_floor_from_conditional(const std::vector<double>& h, int64_t seq_len) {
  TT_ASSERT(!h.empty() && seq_len >= 1, "window floor needs h[0..k] and T >= 1");
  const int64_t k = static_cast<int64_t>(h.size()) - 1;
  if (k == 0) return h[0];
  double sum = 0;
  const int64_t warm = std::min(seq_len, k - 1);  // predictions i = 0..warm-1 have i+1 < k context
  for (int64_t i = 0; i < warm; ++i) sum += h[i + 1];
  sum += double(seq_len - warm) * h[k];
  return sum / double(seq_len);
}

double MarkovChain::window_floor(int64_t seq_len) const { return window_floor_from_conditional(conditional_, seq_len); }

std::vector<uint32_t> MarkovChain::sample(int64_t n, uint64_t seed) const {
  std::vector<uint32_t> out;
  if (n <= 0) return out;
  out.reserve(static_cast<size_t>(n));
  Rng rng(seed);
  // Stationary start: draw a whole context, emit its tokens oldest first.
  double u = rng.uniform(), acc = 0;
  int64_t ctx = num_contexts_ - 1;
  for (int64_t c = 0; c < num_contexts_; ++c) {
    acc += stationary_[c];
    if (u < acc) {
      ctx = c;
      break;
    }
  }
  for (int i = 0; i < order_ && static_cast<int64_t>(out.size()) < n; ++i)
    out.push_back(static_cast<uint32_t>((ctx / ipow(vocab_, order_ - 1 - i)) % vocab_));
  while (static_cast<int64_t>(out.size()) < n) {
    const double* row = &probs_[ctx * vocab_];
    double r = rng.uniform(), cum = 0;
    int next = -1;
    for (int j = 0; j < vocab_; ++j) {
      cum += row[j];
      if (r < cum) {
        next = j;
        break;
      }
    }
    if (next < 0)  // rounding left r above the last partial sum: take the last possible token
      for (int j = vocab_ - 1; j >= 0 && next < 0; --j)
        if (row[j] > 0) next = j;
    out.push_back(static_cast<uint32_t>(next));
    ctx = shift(ctx, next);
  }
  return out;
}

// ---- generation and files -----------------------------------------------------------------------

SynthResult synth_generate(const SynthSpec& spec) {
  if (spec.stream == 0)
    throw Error(ErrorKind::kConfig, "sample stream 0 is reserved for the transition table", "synth", "use stream >= 1");
  if (spec.num_tokens < 0) throw Error(ErrorKind::kConfig, str("negative token count ", spec.num_tokens), "synth", "");
  MarkovChain chain = MarkovChain::from_spec(spec);
  std::vector<uint32_t> tokens = chain.sample(spec.num_tokens, synth_stream_seed(spec.seed, spec.stream));
  return SynthResult{std::move(chain), synth_alphabet(spec.vocab), std::move(tokens)};
}

void synth_write(const SynthSpec& spec, const std::string& out_dir, int64_t train_tokens, int64_t val_tokens) {
  if (train_tokens < 1 || val_tokens < 1)
    throw Error(ErrorKind::kConfig,
                str("train/val token counts must be >= 1 (got ", train_tokens, ", ", val_tokens, ")"), "synth", "");
  if (out_dir.empty())
    throw Error(ErrorKind::kConfig, "empty output directory", "synth", "name the directory for train.bin/val.bin");
  MarkovChain chain = MarkovChain::from_spec(spec);
  const std::string alphabet = synth_alphabet(spec.vocab);

  ensure_dir(out_dir);
  const std::string base = out_dir.back() == '/' ? out_dir : out_dir + "/";

  write_shard(base + "train.bin", chain.sample(train_tokens, synth_stream_seed(spec.seed, 1)), TokenWidth::kUint16);
  write_shard(base + "val.bin", chain.sample(val_tokens, synth_stream_seed(spec.seed, 2)), TokenWidth::kUint16);

  nlohmann::ordered_json js;
  js["format"] = "topotrain-synth";
  js["version"] = 1;
  js["vocab"] = spec.vocab;
  js["order"] = spec.order;
  js["seed"] = spec.seed;
  js["concentration"] = spec.concentration;
  js["alphabet"] = alphabet;
  js["train_file"] = "train.bin";
  js["val_file"] = "val.bin";
  js["token_dtype"] = "uint16";
  js["train_tokens"] = train_tokens;
  js["val_tokens"] = val_tokens;
  js["entropy_rate_nats"] = chain.entropy_rate();
  js["conditional_entropy_nats"] = nlohmann::ordered_json::array();
  for (int c = 0; c <= spec.order; ++c) js["conditional_entropy_nats"].push_back(chain.conditional_entropy(c));
  js["window_floor_formula"] =
      "floor(T) = (1/T) * sum_{i=0}^{T-1} h[min(i+1, order)], h = conditional_entropy_nats, "
      "h[c] = H(X_c | X_0..X_{c-1}); target x[i+1] is predicted from x[0..i]";
  nlohmann::ordered_json floors = nlohmann::ordered_json::object();
  for (int64_t t : {32, 64, 128, 256, 512, 1024}) floors[std::to_string(t)] = chain.window_floor(t);
  js["window_floor_nats"] = floors;
  // Written like the shards (core/fs.h): old or new, never partial.
  atomic_write_string(base + kSynthManifestName, js.dump(2) + "\n");
}

SynthManifest read_synth_manifest(const std::string& path) {
  const std::string regenerate = "regenerate it with `topotrain data synth`";
  std::string text;
  try {
    text = read_file_to_string(path, ErrorKind::kData);
  } catch (const Error& e) {
    throw Error(ErrorKind::kData, "cannot open synthetic corpus manifest: " + e.problem(), path,
                "it is written by `topotrain data synth` next to train.bin/val.bin");
  }
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kData, str("malformed JSON: ", e.what()), path, regenerate);
  }
  if (!root.is_object()) throw Error(ErrorKind::kData, "manifest is not a JSON object", path, regenerate);
  auto field = [&](const char* key, bool (nlohmann::json::*is_type)() const noexcept) -> const nlohmann::json& {
    auto it = root.find(key);
    if (it == root.end() || !((*it).*is_type)())
      throw Error(ErrorKind::kData, str("manifest lacks field \"", key, "\" of the expected type"), path, regenerate);
    return *it;
  };
  auto number = [&](const char* key) -> const nlohmann::json& { return field(key, &nlohmann::json::is_number); };
  // Integers must be JSON integers: converting a float such as 1e300 would overflow.
  auto integer = [&](const char* key) -> const nlohmann::json& {
    return field(key, &nlohmann::json::is_number_integer);
  };
  SynthManifest m;
  m.vocab = integer("vocab").get<int>();
  m.order = integer("order").get<int>();
  m.seed = integer("seed").get<uint64_t>();
  m.concentration = number("concentration").get<double>();
  m.alphabet = field("alphabet", &nlohmann::json::is_string).get<std::string>();
  m.entropy_rate_nats = number("entropy_rate_nats").get<double>();
  for (const nlohmann::json& h : field("conditional_entropy_nats", &nlohmann::json::is_array)) {
    if (!h.is_number()) throw Error(ErrorKind::kData, "conditional_entropy_nats holds a non-number", path, regenerate);
    m.conditional_entropy_nats.push_back(h.get<double>());
  }
  m.train_tokens = integer("train_tokens").get<int64_t>();
  m.val_tokens = integer("val_tokens").get<int64_t>();
  if (m.vocab < 1 || static_cast<size_t>(m.vocab) != m.alphabet.size() ||
      m.conditional_entropy_nats.size() != static_cast<size_t>(m.order) + 1)
    throw Error(ErrorKind::kData, "manifest fields disagree (vocab vs alphabet, order vs conditional entropies)", path,
                regenerate);
  return m;
}

std::string find_synth_manifest(const std::string& shard_path) {
  size_t slash = shard_path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : shard_path.substr(0, slash == 0 ? 1 : slash);
  std::string candidate = (dir == "/" ? dir : dir + "/") + kSynthManifestName;
  return is_regular_file(candidate) ? candidate : "";
}

}  // namespace tt::data
