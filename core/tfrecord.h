// The TFRecord framing of TensorBoard event files: each record is its length (uint64,
// little-endian), the masked CRC-32C of those 8 length bytes, the data, and the masked CRC-32C of
// the data (both CRCs uint32, little-endian; mask: see masked_crc32c in core/crc32c.h). Design: pure
// functions over byte strings, so the writer can hand one whole record to a single write() and
// tests can check the framing without touching a file.
#pragma once

#include <string>
#include <vector>

namespace tt {

// The framed record for `data` (data.size() + 16 bytes).
std::string tfrecord_frame(const std::string& data);

// The data of every record in `bytes`, the contents of the file `name` (used in messages). Throws
// tt::Error(kData) naming the file and the record's offset when a length or a CRC is wrong or the
// last record is cut short.
std::vector<std::string> tfrecord_split(const std::string& bytes, const std::string& name);

}  // namespace tt
