// Chrome trace-event JSON writer and the span exchange form (see trace_events.h).
#include "core/trace_events.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace tt::trace {

namespace {
using nlohmann::json;

json metadata(const char* name, int pid, int tid, json args) {
  return json{{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}
}  // namespace

void spread_overlapping(TraceProcess& process, int lane) {
  std::vector<Span*> spans;
  for (Span& s : process.spans)
    if (s.lane == lane) spans.push_back(&s);
  std::stable_sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) { return a->start_ns < b->start_ns; });
  std::vector<int64_t> free_from;  // per sub-lane, when its last span ends
  for (Span* s : spans) {
    size_t k = 0;
    while (k < free_from.size() && free_from[k] > s->start_ns) ++k;
    if (k == free_from.size()) free_from.push_back(0);
    free_from[k] = s->start_ns + s->duration_ns;
    s->lane = lane + int(k);
  }
  std::string name = "lane " + std::to_string(lane);
  for (const auto& [l, n] : process.lanes)
    if (l == lane) name = n;
  for (size_t k = 1; k < free_from.size(); ++k) {
    bool named = false;
    for (const auto& entry : process.lanes) named |= entry.first == lane + int(k);
    if (!named) process.lanes.emplace_back(lane + int(k), name + " " + std::to_string(k + 1));
  }
}

std::string chrome_trace_json(const std::vector<TraceProcess>& processes, const std::string& other_data_json) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const TraceProcess& p : processes)
    for (const Span& s : p.spans) origin = std::min(origin, s.start_ns - p.clock_offset_ns);
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;

  json events = json::array();
  for (const TraceProcess& p : processes) {
    events.push_back(metadata("process_name", p.pid, 0, {{"name", p.name}}));
    events.push_back(metadata("process_sort_index", p.pid, 0, {{"sort_index", p.pid}}));
    for (const auto& lane_name : p.lanes) {
      const int lane = lane_name.first;
      const std::string& name = lane_name.second;
      const bool used = std::any_of(p.spans.begin(), p.spans.end(), [&](const Span& s) { return s.lane == lane; });
      if (!used) continue;  // a lane with nothing on it (the device lane on a CPU run)
      events.push_back(metadata("thread_name", p.pid, lane, {{"name", name}}));
      events.push_back(metadata("thread_sort_index", p.pid, lane, {{"sort_index", lane}}));
    }
    // Parents before children at equal start, so viewers that read in order nest them right.
    std::vector<const Span*> order;
    for (const Span& s : p.spans) order.push_back(&s);
    std::stable_sort(order.begin(), order.end(), [](const Span* a, const Span* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->duration_ns > b->duration_ns;
    });
    for (const Span* s : order) {
      json e{{"name", s->name},
             {"cat", s->category.empty() ? std::string("span") : s->category},
             {"ph", "X"},
             {"pid", p.pid},
             {"tid", s->lane},
             {"ts", double(s->start_ns - p.clock_offset_ns - origin) / 1e3},
             {"dur", double(std::max<int64_t>(s->duration_ns, 0)) / 1e3}};
      if (!s->args.empty()) e["args"] = json::parse(s->args, nullptr, /*allow_exceptions=*/false);
      if (e.contains("args") && e["args"].is_discarded()) e["args"] = json{{"unparsed", s->args}};
      events.push_back(std::move(e));
    }
  }
  json doc{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  json other = other_data_json.empty() ? json::object() : json::parse(other_data_json, nullptr, false);
  doc["otherData"] = other.is_discarded() ? json::object() : other;
  return doc.dump() + "\n";
}

std::string process_to_json(const TraceProcess& process) {
  json lanes = json::array();
  for (const auto& [lane, name] : process.lanes) lanes.push_back({lane, name});
  json spans = json::array();
  for (const Span& s : process.spans) spans.push_back({s.name, s.category, s.start_ns, s.duration_ns, s.lane, s.args});
  return json{{"pid", process.pid}, {"name", process.name}, {"lanes", lanes}, {"spans", spans}}.dump();
}

TraceProcess process_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    TraceProcess p;
    p.pid = j.at("pid").get<int>();
    p.name = j.at("name").get<std::string>();
    for (const json& l : j.at("lanes")) p.lanes.emplace_back(l.at(0).get<int>(), l.at(1).get<std::string>());
    for (const json& s : j.at("spans"))
      p.spans.push_back(Span{s.at(0).get<std::string>(), s.at(1).get<std::string>(), s.at(2).get<int64_t>(),
                             s.at(3).get<int64_t>(), s.at(4).get<int>(), s.at(5).get<std::string>()});
    return p;
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kInternal, std::string("a rank's trace spans do not parse: ") + e.what());
  }
}

}  // namespace tt::trace
