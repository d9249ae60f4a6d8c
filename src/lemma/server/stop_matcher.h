// StopMatcher: finds OpenAI stop strings in streamed text, even when a stop string spans token
// boundaries, by holding back the longest tail that could still begin a stop string.
// One instance per output choice; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lemma::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string text;      // safe to emit now (never contains a stop string)
    bool stopped = false;  // a stop string matched: `text` is everything before it; ignore the rest
  };
  // Appends `piece` (whole UTF-8 code points) and returns what can be released.
  Result feed(std::string_view piece);
  // The held-back tail, released when the choice ends without a match.
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that matched (the earliest in the text; of those starting there, the first
  // given); empty until stopped().
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace lemma::server
