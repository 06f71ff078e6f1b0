// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of checkpoints and of
// TensorBoard's TFRecord framing. Design: a portable software slice-by-8 table (8 bytes per step,
// tables built at compile time) so results never depend on CPU features; crc32c_combine lets a
// caller checksum a whole file from per-section checksums without a second pass over the data.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tt {

// Extends a finished CRC-32C `crc` (0 for the empty string) by n bytes, like zlib's crc32():
// crc32c_update(crc32c_update(0, a, na), b, nb) == crc32c(a ++ b). Pure and thread-safe.
uint32_t crc32c_update(uint32_t crc, const void* data, size_t n);

// CRC-32C of n bytes. crc32c("123456789", 9) == 0xE3069283.
inline uint32_t crc32c(const void* data, size_t n) { return crc32c_update(0, data, n); }

// CRC-32C of A ++ B given crc_a = crc32c(A), crc_b = crc32c(B) and len_b = |B|, in O(log len_b)
// without touching the data.
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// TFRecord's masked CRC: rotate right by 15 and add 0xa282ead8 (mod 2^32).
inline uint32_t masked_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
// Inverse of masked_crc32c.
inline uint32_t unmask_crc32c(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace tt
