// Checks a Chrome/Perfetto trace (Trace Event Format JSON) as lemma writes it: every "X" event has
// name, cat, ts, dur, pid, tid and args, and on each thread the ranges nest (a range that starts
// inside another ends inside it). Header-only, shared by the trace unit test and the CLI test.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lemma::testing {

struct TraceRange {
  std::string name;
  double ts = 0.0, end = 0.0;
  int64_t tid = 0;
  nlohmann::json args;
};

// The "X" events of `trace`, or an error message in `why` (empty when the trace is well formed).
inline std::vector<TraceRange> trace_ranges(const nlohmann::json& trace, std::string& why) {
  std::vector<TraceRange> ranges;
  why.clear();
  if (!trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    why = "no traceEvents array";
    return ranges;
  }
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    for (const char* key : {"name", "cat", "ts", "dur", "pid", "tid", "args"})
      if (!e.contains(key)) {
        why = std::string("an X event lacks \"") + key + "\": " + e.dump();
        return ranges;
      }
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    if (dur < 0) {
      why = "negative dur: " + e.dump();
      return ranges;
    }
    ranges.push_back({e["name"].get<std::string>(), ts, ts + dur, e["tid"].get<int64_t>(), e["args"]});
  }
  return ranges;
}

// Empty when every thread's ranges nest properly; else the first pair that overlaps.
inline std::string nesting_error(std::vector<TraceRange> ranges) {
  constexpr double kSlack = 1e-3;  // µs: ts and dur are each exact to the ns, their sum may round
  std::stable_sort(ranges.begin(), ranges.end(), [](const TraceRange& a, const TraceRange& b) {
    return a.tid != b.tid ? a.tid < b.tid : a.ts != b.ts ? a.ts < b.ts : a.end > b.end;
  });
  std::vector<const TraceRange*> open;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const TraceRange& r = ranges[i];
    if (i > 0 && ranges[i - 1].tid != r.tid) open.clear();
    while (!open.empty() && open.back()->end <= r.ts + kSlack) open.pop_back();
    if (!open.empty() && r.end > open.back()->end + kSlack)
      return "on tid " + std::to_string(r.tid) + ", \"" + r.name + "\" [" + std::to_string(r.ts) + ", " +
             std::to_string(r.end) + ") overlaps \"" + open.back()->name + "\" [" + std::to_string(open.back()->ts) + ", " +
             std::to_string(open.back()->end) + ")";
    open.push_back(&r);
  }
  return {};
}

// Name of the innermost range enclosing `r` on its thread ("" when none).
inline std::string parent_name(const std::vector<TraceRange>& ranges, const TraceRange& r) {
  const TraceRange* best = nullptr;
  for (const auto& o : ranges) {
    if (&o == &r || o.tid != r.tid || o.ts > r.ts || o.end < r.end) continue;
    if (o.ts == r.ts && o.end == r.end) continue;  // equal extents: not an ancestor by time
    if (best == nullptr || o.end - o.ts < best->end - best->ts) best = &o;
  }
  return best == nullptr ? std::string() : best->name;
}

inline std::set<std::string> range_names(const std::vector<TraceRange>& ranges) {
  std::set<std::string> names;
  for (const auto& r : ranges) names.insert(r.name);
  return names;
}

}  // namespace lemma::testing
