// Synthetic Markov corpus: table generation, exact stationary distribution and entropies, sampling,
// and the train/val/manifest writer. Decision: only tt::Rng (splitmix64) and +,*,log,pow feed the
// numbers, so a seed names the same corpus everywhere; exact quantities come from the table itself
// (power iteration + block entropies), never from samples.
#include "data/synth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
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

// ---- minimal JSON reader for synth.json ---------------------------------------------------------

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject } type = Type::kNull;
  std::string text;  // string contents, or the raw number literal
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;
  const JsonValue* find(const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
};

class JsonParser {
 public:
  JsonParser(const std::string& s, const std::string& path) : s_(s), path_(path) {}
  JsonValue parse_document() {
    JsonValue v = parse_value();
    skip_ws();
    if (pos_ != s_.size()) fail("trailing characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw Error(ErrorKind::kData, str("malformed JSON at byte ", pos_, ": ", what), path_,
                "regenerate it with `topotrain data synth`");
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() {
    skip_ws();
    if (pos_ >= s_.size()) fail("unexpected end of file");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(str("expected '", c, "'"));
    ++pos_;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          unsigned code = std::stoul(s_.substr(pos_, 4), nullptr, 16);
          pos_ += 4;
          if (code > 0x7F) fail("non-ASCII \\u escape (synth.json is ASCII)");
          out += static_cast<char>(code);
          break;
        }
        default: fail(str("bad escape \\", e));
      }
    }
  }
  JsonValue parse_value() {
    JsonValue v;
    char c = peek();
    if (c == '{') {
      ++pos_;
      v.type = JsonValue::Type::kObject;
      if (peek() == '}') { ++pos_; return v; }
      while (true) {
        std::string key = parse_string();
        expect(':');
        v.members.emplace_back(key, parse_value());
        if (peek() == ',') { ++pos_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      ++pos_;
      v.type = JsonValue::Type::kArray;
      if (peek() == ']') { ++pos_; return v; }
      while (true) {
        v.items.push_back(parse_value());
        if (peek() == ',') { ++pos_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = JsonValue::Type::kString;
      v.text = parse_string();
      return v;
    }
    for (const char* word : {"true", "false", "null"}) {
      size_t n = std::strlen(word);
      if (s_.compare(pos_, n, word) == 0) {
        pos_ += n;
        v.type = word[0] == 'n' ? JsonValue::Type::kNull : JsonValue::Type::kBool;
        v.text = word;
        return v;
      }
    }
    size_t start = pos_;
    while (pos_ < s_.size() && std::strchr("+-0123456789.eE", s_[pos_])) ++pos_;
    if (start == pos_) fail(str("unexpected character '", c, "'"));
    v.type = JsonValue::Type::kNumber;
    v.text = s_.substr(start, pos_ - start);
    return v;
  }

  const std::string& s_;
  std::string path_;
  size_t pos_ = 0;
};

std::string fmt_double(double x) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
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
      throw Error(ErrorKind::kData,
                  str("token id ", ids[i], " at position ", i, " is outside the alphabet of ", alphabet.size(),
                      " characters"),
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
    throw Error(ErrorKind::kConfig,
                str("transition table has ", probs_.size(), " entries, expected V^(k+1) = ", C * V), "synth",
                "pass V^k rows (contexts) of V probabilities");
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
      throw Error(ErrorKind::kConfig, str("row ", c, " of the transition table sums to ", fmt_double(sum)),
                  "synth", "each context's row must sum to 1");
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
                str("the chain's stationary distribution did not converge in ", max_iters, " iterations"),
                "synth", "the chain mixes too slowly (or is not irreducible); lower --concentration");
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

double MarkovChain::window_floor(int64_t seq_len) const {
  return window_floor_from_conditional(conditional_, seq_len);
}

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
    if (u < acc) { ctx = c; break; }
  }
  for (int i = 0; i < order_ && static_cast<int64_t>(out.size()) < n; ++i)
    out.push_back(static_cast<uint32_t>((ctx / ipow(vocab_, order_ - 1 - i)) % vocab_));
  while (static_cast<int64_t>(out.size()) < n) {
    const double* row = &probs_[ctx * vocab_];
    double r = rng.uniform(), cum = 0;
    int next = -1;
    for (int j = 0; j < vocab_; ++j) {
      cum += row[j];
      if (r < cum) { next = j; break; }
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
    throw Error(ErrorKind::kConfig, "sample stream 0 is reserved for the transition table", "synth",
                "use stream >= 1");
  if (spec.num_tokens < 0)
    throw Error(ErrorKind::kConfig, str("negative token count ", spec.num_tokens), "synth", "");
  MarkovChain chain = MarkovChain::from_spec(spec);
  std::vector<uint32_t> tokens = chain.sample(spec.num_tokens, synth_stream_seed(spec.seed, spec.stream));
  return SynthResult{std::move(chain), synth_alphabet(spec.vocab), std::move(tokens)};
}

void synth_write(const SynthSpec& spec, const std::string& out_dir, int64_t train_tokens, int64_t val_tokens) {
  if (train_tokens < 1 || val_tokens < 1)
    throw Error(ErrorKind::kConfig, str("train/val token counts must be >= 1 (got ", train_tokens, ", ", val_tokens, ")"),
                "synth", "");
  if (out_dir.empty())
    throw Error(ErrorKind::kConfig, "empty output directory", "synth", "name the directory for train.bin/val.bin");
  MarkovChain chain = MarkovChain::from_spec(spec);
  const std::string alphabet = synth_alphabet(spec.vocab);

  // mkdir -p out_dir
  for (size_t pos = 1; pos <= out_dir.size(); ++pos) {
    if (pos != out_dir.size() && out_dir[pos] != '/') continue;
    std::string part = out_dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error(ErrorKind::kRuntime, str("cannot create directory: ", std::strerror(errno)), part,
                  "check the --out path and permissions");
  }
  struct stat st;
  if (::stat(out_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(ErrorKind::kRuntime, "output path exists and is not a directory", out_dir, "pick another --out");
  const std::string base = out_dir.back() == '/' ? out_dir : out_dir + "/";

  write_shard(base + "train.bin", chain.sample(train_tokens, synth_stream_seed(spec.seed, 1)), TokenWidth::kUint16);
  write_shard(base + "val.bin", chain.sample(val_tokens, synth_stream_seed(spec.seed, 2)), TokenWidth::kUint16);

  std::ostringstream js;
  js << "{\n"
     << "  \"format\": \"topotrain-synth\",\n"
     << "  \"version\": 1,\n"
     << "  \"vocab\": " << spec.vocab << ",\n"
     << "  \"order\": " << spec.order << ",\n"
     << "  \"seed\": " << spec.seed << ",\n"
     << "  \"concentration\": " << fmt_double(spec.concentration) << ",\n"
     << "  \"alphabet\": \"" << json_escape(alphabet) << "\",\n"
     << "  \"train_file\": \"train.bin\",\n"
     << "  \"val_file\": \"val.bin\",\n"
     << "  \"token_dtype\": \"uint16\",\n"
     << "  \"train_tokens\": " << train_tokens << ",\n"
     << "  \"val_tokens\": " << val_tokens << ",\n"
     << "  \"entropy_rate_nats\": " << fmt_double(chain.entropy_rate()) << ",\n"
     << "  \"conditional_entropy_nats\": [";
  for (int c = 0; c <= spec.order; ++c) js << (c ? ", " : "") << fmt_double(chain.conditional_entropy(c));
  js << "],\n"
     << "  \"window_floor_formula\": \"floor(T) = (1/T) * sum_{i=0}^{T-1} h[min(i+1, order)], "
        "h = conditional_entropy_nats, h[c] = H(X_c | X_0..X_{c-1}); target x[i+1] is predicted from x[0..i]\",\n"
     << "  \"window_floor_nats\": {";
  const int64_t floors[] = {32, 64, 128, 256, 512, 1024};
  for (size_t i = 0; i < sizeof(floors) / sizeof(floors[0]); ++i)
    js << (i ? ", " : "") << "\"" << floors[i] << "\": " << fmt_double(chain.window_floor(floors[i]));
  js << "}\n}\n";

  // Manifest written like the shards: temp file + fsync + rename, so it is old or new, never partial.
  const std::string manifest = base + kSynthManifestName;
  const std::string tmp = str(manifest, ".tmp.", ::getpid());
  const std::string content = js.str();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < content.size();) {
    ssize_t w = ::write(fd, content.data() + done, content.size() - done);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) done += static_cast<size_t>(w);
  }
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(tmp.c_str(), manifest.c_str()) == 0;
  if (!ok) {
    std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::kRuntime, "cannot write manifest: " + reason, manifest,
                "check free disk space and permissions of the output directory");
  }
}

SynthManifest read_synth_manifest(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error(ErrorKind::kData, "cannot open synthetic corpus manifest", path,
                "it is written by `topotrain data synth` next to train.bin/val.bin");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  JsonValue root = JsonParser(text, path).parse_document();
  if (root.type != JsonValue::Type::kObject)
    throw Error(ErrorKind::kData, "manifest is not a JSON object", path, "regenerate it with `topotrain data synth`");
  auto field = [&](const char* key, JsonValue::Type type) -> const JsonValue& {
    const JsonValue* v = root.find(key);
    if (!v || v->type != type)
      throw Error(ErrorKind::kData, str("manifest lacks field \"", key, "\" of the expected type"), path,
                  "regenerate it with `topotrain data synth`");
    return *v;
  };
  auto number = [&](const char* key) { return field(key, JsonValue::Type::kNumber).text; };
  SynthManifest m;
  m.vocab = std::stoi(number("vocab"));
  m.order = std::stoi(number("order"));
  m.seed = std::stoull(number("seed"));
  m.concentration = std::stod(number("concentration"));
  m.alphabet = field("alphabet", JsonValue::Type::kString).text;
  m.entropy_rate_nats = std::stod(number("entropy_rate_nats"));
  for (const JsonValue& h : field("conditional_entropy_nats", JsonValue::Type::kArray).items) {
    if (h.type != JsonValue::Type::kNumber)
      throw Error(ErrorKind::kData, "conditional_entropy_nats holds a non-number", path,
                  "regenerate it with `topotrain data synth`");
    m.conditional_entropy_nats.push_back(std::stod(h.text));
  }
  m.train_tokens = std::stoll(number("train_tokens"));
  m.val_tokens = std::stoll(number("val_tokens"));
  if (m.vocab < 1 || static_cast<size_t>(m.vocab) != m.alphabet.size() ||
      m.conditional_entropy_nats.size() != static_cast<size_t>(m.order) + 1)
    throw Error(ErrorKind::kData, "manifest fields disagree (vocab vs alphabet, order vs conditional entropies)",
                path, "regenerate it with `topotrain data synth`");
  return m;
}

std::string find_synth_manifest(const std::string& shard_path) {
  size_t slash = shard_path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : shard_path.substr(0, slash == 0 ? 1 : slash);
  std::string candidate = (dir == "/" ? dir : dir + "/") + kSynthManifestName;
  struct stat st;
  return ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? candidate : "";
}

}  // namespace tt::data
