// Human-readable numbers for progress lines and summaries (stderr bars, ETAs, rates).
// Decision: fixed, short shapes ("1h02m", "3m05s", "42s"; "1.50M") so columns stay narrow and a log
// line reads the same wherever it was printed. Only .cpp files include this header.
#pragma once

#include <string>

namespace tt {

// Seconds rounded to the nearest second: "1h02m" from an hour up, "3m05s" from a minute up, else
// "42s"; "?" for NaN, infinities and negative values (an ETA not known yet).
std::string format_duration(double seconds);

// A count with a metric suffix: "1.23B", "4.56M", "78.9k" (from 10,000 up), else the integer "9876".
std::string format_count(double n);

}  // namespace tt
