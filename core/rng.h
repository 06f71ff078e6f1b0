// Deterministic random numbers whose whole state is two plain integers, so it can be saved in a
// checkpoint and restored bit-exactly. xoshiro-style generators and std:: distributions differ
// between libraries; this one (splitmix64 stream + own Box-Muller) gives the same numbers everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tt {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_(seed) {}

  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // Standard normal (Box-Muller, both values used).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    double r = std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

  // Stored raw in checkpoints: the padding is an explicit zero field, so that a checkpoint's bytes
  // are a function of the run alone (implicit padding would carry whatever was on the stack).
  struct State {
    uint64_t counter;
    uint64_t spare_bits;
    uint32_t has_spare;
    uint32_t reserved = 0;
  };
  State state() const;
  void set_state(const State& s);

 private:
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

static_assert(std::has_unique_object_representations_v<Rng::State>, "Rng::State must have no implicit padding");

inline Rng::State Rng::state() const {
  uint64_t bits;
  static_assert(sizeof(bits) == sizeof(spare_));
  __builtin_memcpy(&bits, &spare_, 8);
  return {state_, bits, has_spare_ ? 1u : 0u};
}

inline void Rng::set_state(const State& s) {
  state_ = s.counter;
  __builtin_memcpy(&spare_, &s.spare_bits, 8);
  has_spare_ = s.has_spare != 0;
}

}  // namespace tt
