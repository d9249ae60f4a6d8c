#include "lemma/server/stop_matcher.h"

#include <algorithm>

namespace lemma::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopMatcher::Result StopMatcher::feed(std::string_view piece) {
  Result out;
  if (stopped_) return out;
  held_.append(piece);
  // Earliest match of any stop string.
  size_t match = std::string::npos;
  for (const auto& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at < match) {
      match = at;
      matched_ = stop;
    }
  }
  if (match != std::string::npos) {
    out.text = held_.substr(0, match);
    out.stopped = stopped_ = true;
    held_.clear();
    return out;
  }
  // Keep the longest suffix of held_ that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, held_.size()); len > keep; --len) {
      if (held_.compare(held_.size() - len, len, stop, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  out.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(held_);
  return out;
}

}  // namespace lemma::server
