#include "lemma/io/strict_json.h"

#include <set>
#include <vector>

#include "lemma/base/error.h"

namespace lemma::io {

using json = nlohmann::json;

nlohmann::json parse_strict_json(std::string_view text, const std::string& name, int max_depth) {
  // nlohmann keeps the last of two equal keys; we track the keys of every open object ourselves.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  int depth = 0;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (++depth > max_depth) fail<FormatError>("{}: JSON nests deeper than {}", name, max_depth);
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        --depth;
        open_objects.pop_back();
        break;
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key:
        if (!open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  json value;
  try {
    value = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    fail<FormatError>("{}: invalid JSON: {}", name, e.what());
  }
  if (!duplicate.empty()) fail<FormatError>("{}: duplicate key '{}'", name, duplicate);
  return value;
}

}  // namespace lemma::io
