// One-line JSON records (metrics.jsonl, run metadata). Design: a flat object built by appending
// key/value pairs in call order — no DOM, no parser — with numbers printed so they read back
// bit-exactly (shortest %g form that round-trips; at most 9 significant digits for float, 17 for
// double) and NaN/Inf written as null, which JSON cannot represent.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace tt {

// JSON string-literal body for s (no surrounding quotes): escapes '"', '\\' and control characters
// (\n \t \r \b \f, others as \u00XX); other bytes, UTF-8 included, pass through unchanged.
std::string json_escape(const std::string& s);

// Builds {"k":v,...}. Keys are escaped; duplicate keys are the caller's problem. Not thread-safe.
class JsonLine {
 public:
  template <typename T, typename std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  JsonLine& add(const std::string& key, T value) {
    return add_raw(key, std::to_string(value));
  }
  JsonLine& add(const std::string& key, bool value) { return add_raw(key, value ? "true" : "false"); }
  JsonLine& add(const std::string& key, float value);
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, const std::string& value);
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  // Appends an already-serialized JSON value (a nested object or array) verbatim.
  JsonLine& add_raw(const std::string& key, const std::string& json);

  // The object, without a trailing newline.
  std::string str() const { return "{" + body_ + "}"; }
  bool empty() const { return body_.empty(); }

 private:
  std::string body_;
};

// Shortest decimal that reads back as exactly `value` ("null" for NaN/Inf).
std::string json_number(float value);
std::string json_number(double value);

}  // namespace tt
