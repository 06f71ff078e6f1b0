// TFRecord framing and splitting (see tfrecord.h). Integers are assembled byte by byte, so the
// result is little-endian on any host.
#include "core/tfrecord.h"

#include <cstdint>

#include "core/crc32c.h"
#include "core/error.h"

namespace tt {

namespace {

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((value >> (8 * i)) & 0xff));
}

uint64_t get_le(const std::string& in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t(uint8_t(in[at + i])) << (8 * i);
  return value;
}

uint32_t masked_crc_of(const char* data, size_t n) { return masked_crc32c(crc32c(data, n)); }

}  // namespace

std::string tfrecord_frame(const std::string& data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc_of(out.data(), 8), 4);
  out += data;
  put_le(out, masked_crc_of(data.data(), data.size()), 4);
  return out;
}

std::vector<std::string> tfrecord_split(const std::string& bytes, const std::string& name) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    const std::string where = str(name, " (record ", records.size(), " at byte ", at, ")");
    if (bytes.size() - at < 12) throw Error(ErrorKind::kData, "record header cut short", where);
    const uint64_t length = get_le(bytes, at, 8);
    if (get_le(bytes, at + 8, 4) != masked_crc_of(bytes.data() + at, 8))
      throw Error(ErrorKind::kData, "length CRC mismatch", where);
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4)
      throw Error(ErrorKind::kData, str("record of ", length, " bytes runs past the end of the file"), where);
    const size_t data_at = at + 12;
    if (get_le(bytes, data_at + length, 4) != masked_crc_of(bytes.data() + data_at, length))
      throw Error(ErrorKind::kData, "data CRC mismatch", where);
    records.push_back(bytes.substr(data_at, length));
    at = data_at + length + 4;
  }
  return records;
}

}  // namespace tt
