// The HTML page of `topotrain report` (see report_page.h).
#include "launch/report/report_page.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/error.h"

namespace tt {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 2]));
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string ms(double seconds) { return std::isfinite(seconds) ? fixed(seconds * 1e3, 1) + " ms" : "–"; }

std::string bytes_text(double b) {
  if (!std::isfinite(b)) return "–";
  if (b >= double(1 << 30)) return fixed(b / double(1 << 30), 2) + " GiB";
  return fixed(b / double(1 << 20), 1) + " MiB";
}

const char* kStyle = R"(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 940px;
       padding: 16px 24px 48px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
.sub { color: #666; margin-top: 0; } nav a { margin-right: 12px; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 12px 3px 0; text-align: left; }
th { color: #555; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 8px 0; } figure img { width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 13px; } .none { color: #888; font-style: italic; }
pre { background: #f6f6f6; padding: 10px; overflow-x: auto; font-size: 12px; }
footer { color: #888; font-size: 12px; margin-top: 40px; }
)";

// Marks the body with how many pictures decoded, for readers and tests that load the page.
const char* kScript = R"(
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('figure img'), ok = 0;
  for (var i = 0; i < imgs.length; ++i) if (imgs[i].complete && imgs[i].naturalWidth > 0) ++ok;
  document.body.setAttribute('data-images-loaded', ok + '/' + imgs.length);
});
)";

struct Section {
  std::string id, title;
};

const std::vector<Section>& sections() {
  static const std::vector<Section> s = {{"summary", "Summary"},       {"loss", "Loss"},
                                         {"throughput", "Throughput"}, {"memory", "Memory"},
                                         {"phases", "Step phases"},    {"prediction", "Predicted vs measured"},
                                         {"ranks", "Ranks"},           {"config", "Configuration"}};
  return s;
}

std::string figure(const Chart& c) {
  return str("<figure><img alt=\"", escape(c.caption), "\" src=\"data:image/svg+xml;base64,", base64(c.svg),
             "\"><figcaption>", escape(c.caption), "</figcaption></figure>\n");
}

std::string summary_table(const RunReport& r) {
  const MetricsRecord& last = r.metrics.back();
  double best_val = NAN;
  for (const MetricsRecord& m : r.metrics)
    if (m.has("val_loss") && (!std::isfinite(best_val) || m.get("val_loss") < best_val)) best_val = m.get("val_loss");
  double final_val = NAN;
  for (const MetricsRecord& m : r.metrics)
    if (m.has("val_loss")) final_val = m.get("val_loss");
  double peak = NAN;
  for (const MetricsRecord& m : r.metrics)
    if (m.has("peak_memory_bytes"))
      peak = std::isfinite(peak) ? std::max(peak, m.get("peak_memory_bytes")) : m.get("peak_memory_bytes");
  int skipped = 0;
  for (const MetricsRecord& m : r.metrics) skipped += m.get("skipped") == 1.0;
  const size_t warm = r.metrics.size() > 3 ? 1 : 0;  // the first step includes one-time set-up
  std::string t = "<table>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    t += "<tr><th>" + escape(k) + "</th><td class=\"num\">" + escape(v) + "</td></tr>\n";
  };
  row("steps logged", str(r.metrics.size(), " (last step ", last.step, ")"));
  row("final train loss", fixed(last.get("loss"), 4));
  row("final / best validation loss", fixed(final_val, 4) + " / " + fixed(best_val, 4));
  if (std::isfinite(r.entropy_floor)) row("entropy floor of the data", fixed(r.entropy_floor, 4));
  row("median tokens/s", fixed(median_of(r.metrics, "tokens_per_s", warm), 0));
  row("median step time", ms(median_of(r.metrics, "step_s", warm)));
  if (!std::isnan(median_of(r.metrics, "mfu", warm)))
    row("median MFU", fixed(100 * median_of(r.metrics, "mfu", warm), 1) + " %");
  row("peak memory (rank 0)", bytes_text(peak));
  if (skipped) row("steps skipped (non-finite gradient)", str(skipped));
  return t + "</table>\n";
}

std::string prediction_table(const RunReport& r) {
  const size_t warm = r.metrics.size() > 3 ? 1 : 0;
  std::string t =
      "<table>\n<tr><th></th><th>predicted</th><th>measured (median)</th><th>measured / predicted</th></tr>\n";
  for (const auto& [field, label] : std::vector<std::pair<std::string, std::string>>{
           {"step_s", "step"}, {"comm_s", "communication"}, {"exposed_comm_s", "exposed communication"}}) {
    const double p = r.predicted.count(field) ? r.predicted.at(field) : NAN;
    const double m = median_of(r.metrics, field, warm);
    t += str("<tr><th>", label, "</th><td class=\"num\">", ms(p), "</td><td class=\"num\">", ms(m),
             "</td><td class=\"num\">", std::isfinite(p) && p > 0 ? fixed(m / p, 2) : "–", "</td></tr>\n");
  }
  t += "</table>\n";
  if (!r.prediction_inputs.empty()) {
    t += "<p>The prediction assumed:</p>\n<table>\n";
    for (const auto& [name, value] : r.prediction_inputs)
      t += "<tr><th>" + escape(name) + "</th><td>" + escape(value) + "</td></tr>\n";
    t += "</table>\n";
  }
  return t;
}

std::string ranks_table(const RunReport& r) {
  std::vector<std::string> names;
  for (const RankPhases& rp : r.rank_phases)
    for (const auto& [name, s] : rp.seconds)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::string t = "<table>\n<tr><th>rank</th>";
  for (const std::string& n : names) t += "<th>" + escape(n) + "</th>";
  t += "</tr>\n";
  for (const RankPhases& rp : r.rank_phases) {
    t += str("<tr><th>", rp.rank, "</th>");
    for (const std::string& n : names)
      t += "<td class=\"num\">" + ms((rp.seconds.count(n) ? rp.seconds.at(n) : 0.0) / std::max(1, r.traced_steps)) +
           "</td>";
    t += "</tr>\n";
  }
  return t + "</table>\n";
}

}  // namespace

const std::vector<std::string>& report_section_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> v;
    for (const Section& s : sections()) v.push_back(s.id);
    return v;
  }();
  return ids;
}

std::string report_html(const RunReport& r, const std::vector<Chart>& charts, const std::string& generated_at) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>topotrain report: " +
                  escape(r.run_dir) + "</title>\n<style>" + kStyle + "</style>\n<script>" + kScript +
                  "</script>\n</head>\n<body>\n";
  h += "<h1>topotrain report</h1>\n<p class=\"sub\">" + escape(r.run_dir) + "</p>\n<nav>";
  for (const Section& s : sections()) h += "<a href=\"#" + s.id + "\">" + s.title + "</a>";
  h += "</nav>\n";
  for (const Section& s : sections()) {
    h += "<section id=\"" + s.id + "\">\n<h2>" + s.title + "</h2>\n";
    bool shown = false;
    if (s.id == "summary") {
      h += summary_table(r);
      shown = true;
    } else if (s.id == "prediction" && !r.predicted.empty()) {
      h += prediction_table(r);
      shown = true;
    } else if (s.id == "ranks" && !r.rank_phases.empty()) {
      h += "<p>From the trace " + escape(r.trace_path) + " (open it in Perfetto or chrome://tracing).</p>\n" +
           ranks_table(r);
      shown = true;
    } else if (s.id == "config" && !r.config_text.empty()) {
      h += "<pre>" + escape(r.config_text) + "</pre>\n";
      shown = true;
    }
    for (const Chart& c : charts)
      if (c.id == s.id) {
        h += figure(c);
        shown = true;
      }
    if (!shown) {
      const std::string why = s.id == "prediction" ? "no prediction.json in the run directory"
                              : s.id == "ranks"  ? "no trace: set train.trace_steps (e.g. \"5-7\") to record every rank"
                              : s.id == "config" ? "no config.pbtxt in the run directory"
                                                 : "the run logged no data for this";
      h += "<p class=\"none\">Not available: " + escape(why) + ".</p>\n";
    }
    h += "</section>\n";
  }
  h += "<footer>Generated by topotrain report at " + escape(generated_at) + ".</footer>\n</body>\n</html>\n";
  return h;
}

}  // namespace tt
