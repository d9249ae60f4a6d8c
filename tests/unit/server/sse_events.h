// Splits an SSE body of named events (`event: <name>\ndata: <json>\n\n`) into (name, payload)
// pairs for the Responses and Messages API tests; fails the test on a frame without both lines.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace lemma::server::testing {

inline std::vector<std::pair<std::string, nlohmann::json>> named_events(const std::string& body) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated SSE frame: " << body.substr(pos);
      break;
    }
    const std::string frame = body.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = frame.find('\n');
    if (frame.rfind("event: ", 0) != 0 || nl == std::string::npos || frame.compare(nl + 1, 6, "data: ") != 0) {
      ADD_FAILURE() << "not a named event: " << frame;
      continue;
    }
    out.emplace_back(frame.substr(7, nl - 7), nlohmann::json::parse(frame.substr(nl + 7)));
  }
  return out;
}

}  // namespace lemma::server::testing
