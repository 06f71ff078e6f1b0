// JSON formatting: escapes per RFC 8259 and shortest-round-trip number printing (try increasing
// %g precision until strtof/strtod reads the same bits back).
#include "core/json_writer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tt {

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out;
}

std::string json_number(float value) {
  if (!std::isfinite(value)) return "null";
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, double(value));
    if (std::strtof(buf, nullptr) == value) break;
  }
  return buf;
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

JsonLine& JsonLine::add(const std::string& key, float value) { return add_raw(key, json_number(value)); }
JsonLine& JsonLine::add(const std::string& key, double value) { return add_raw(key, json_number(value)); }
JsonLine& JsonLine::add(const std::string& key, const std::string& value) {
  return add_raw(key, "\"" + json_escape(value) + "\"");
}

JsonLine& JsonLine::add_raw(const std::string& key, const std::string& json) {
  if (!body_.empty()) body_ += ',';
  body_ += '"';
  body_ += json_escape(key);
  body_ += "\":";
  body_ += json;
  return *this;
}

}  // namespace tt
