// Slice-by-8 CRC-32C: table k maps a byte to its contribution k bytes further along, so each
// 8-byte step is eight independent table lookups XORed together (~1-2 B/cycle, no CPU-specific
// instructions). crc32c_combine follows zlib's GF(2) matrix method (crc32_combine) for this poly.
#include "core/crc32c.h"

#include <array>
#include <cstring>

namespace tt {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (int k = 1; k < 8; ++k)
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  return t;
}

constexpr Tables kTables = make_tables();
static_assert(kTables[0][1] == 0xF26B8303u, "CRC-32C table");

// Multiplies the 32x32 GF(2) matrix `mat` by vector `vec`.
uint32_t gf2_times(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (int i = 0; vec; ++i, vec >>= 1)
    if (vec & 1) sum ^= mat[i];
  return sum;
}

void gf2_square(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = gf2_times(mat, mat[n]);
}

}  // namespace

uint32_t crc32c_update(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  const auto& t = kTables;
  uint32_t c = ~crc;
  // Align to 8 bytes so the wide loads below are aligned.
  while (n && (reinterpret_cast<uintptr_t>(p) & 7)) {
    c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    --n;
  }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    uint32_t lo = uint32_t(word) ^ c, hi = uint32_t(word >> 32);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
#endif
  while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  if (len_b == 0) return crc_a;
  uint32_t even[32], odd[32];
  odd[0] = kPoly;  // operator for one zero bit
  for (int n = 1; n < 32; ++n) odd[n] = 1u << (n - 1);
  gf2_square(even, odd);  // two zero bits
  gf2_square(odd, even);  // four zero bits
  // Apply len_b zero bytes to crc_a: square the operator per bit of len_b (first one = 1 byte).
  do {
    gf2_square(even, odd);
    if (len_b & 1) crc_a = gf2_times(even, crc_a);
    len_b >>= 1;
    if (!len_b) break;
    gf2_square(odd, even);
    if (len_b & 1) crc_a = gf2_times(odd, crc_a);
    len_b >>= 1;
  } while (len_b);
  return crc_a ^ crc_b;
}

}  // namespace tt
