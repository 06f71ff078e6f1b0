// Sampling loop (see sampler.h): logits of the last position -> temperature -> top-k -> draw.
#include "launch/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/rng.h"

namespace tt {

namespace {
int draw(const float* logits, int V, const SampleSettings& s, Rng& rng) {
  if (s.temperature <= 0.0f) return int(std::max_element(logits, logits + V) - logits);
  std::vector<int> order(static_cast<size_t>(V));
  for (int i = 0; i < V; ++i) order[size_t(i)] = i;
  int k = s.top_k > 0 ? std::min(s.top_k, V) : V;
  if (k < V)
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  float maxv = -INFINITY;
  for (int i = 0; i < k; ++i) maxv = std::max(maxv, logits[order[size_t(i)]]);
  std::vector<double> p(static_cast<size_t>(k));
  double sum = 0.0;
  for (int i = 0; i < k; ++i) sum += p[size_t(i)] = std::exp(double(logits[order[size_t(i)]] - maxv) / s.temperature);
  double u = rng.uniform() * sum;
  for (int i = 0; i < k; ++i) {
    u -= p[size_t(i)];
    if (u <= 0.0) return order[size_t(i)];
  }
  return order[size_t(k - 1)];
}
}  // namespace

std::vector<int32_t> sample_tokens(Model& model, std::vector<int32_t> ids, const SampleSettings& s) {
  TT_ASSERT(!ids.empty(), "sampling needs at least one prompt token");
  const int V = model.desc().vocab_size;
  const int window = model.max_seq();
  Rng rng(s.seed);
  std::vector<int32_t> produced;
  for (int i = 0; i < s.max_new_tokens; ++i) {
    const int T = std::min<int>(int(ids.size()), window);
    const int32_t* ctx = ids.data() + ids.size() - size_t(T);
    model.forward(ctx, nullptr, 1, T);
    const int next = draw(model.logits_at(0, T - 1).data(), V, s, rng);
    ids.push_back(next);
    produced.push_back(next);
  }
  return produced;
}

std::string generate_text(Model& model, const TextCodec& codec, const std::string& prompt, const SampleSettings& s) {
  std::vector<int32_t> ids = prompt.empty() ? std::vector<int32_t>{0} : codec.encode(prompt);
  for (int32_t id : ids)
    if (id < 0 || id >= model.desc().vocab_size)
      throw Error(ErrorKind::kData,
                  str("prompt token id ", id, " is outside the vocabulary [0, ", model.desc().vocab_size, ")"),
                  "--prompt", "use ids the model was trained on");
  const std::vector<int32_t> produced = sample_tokens(model, ids, s);
  std::vector<int32_t> all = prompt.empty() ? std::vector<int32_t>{} : ids;
  all.insert(all.end(), produced.begin(), produced.end());
  return codec.decode(all);
}

}  // namespace tt
