// SHA-256 (FIPS 180-4) for content fingerprints: token streams in tests, tokenizer and data
// manifests. Design: a small portable implementation (no OpenSSL dependency); speed is secondary to
// having one exact, dependency-free digest that every component and test can name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tt {

// Incremental hasher: update() any number of times, then digest()/hex_digest() once.
// Not thread-safe (one object per thread); copyable, so a prefix state can be forked.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Finishes the hash and writes the 32-byte digest; the object must not be updated afterwards.
  void digest(uint8_t out[32]);
  // Finishes the hash and returns it as 64 lowercase hex digits.
  std::string hex_digest();

 private:
  void compress(const uint8_t block[64]);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool finished_ = false;
};

// One-shot SHA-256 of n bytes as 64 lowercase hex digits.
std::string sha256_hex(const void* data, size_t n);
inline std::string sha256_hex(std::string_view s) { return sha256_hex(s.data(), s.size()); }

}  // namespace tt
