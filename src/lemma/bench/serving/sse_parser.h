// Incremental Server-Sent Events framing: bytes in (any split), the `data:` payload of each event
// out. Lines end with \n or \r\n; an event ends at a blank line; several `data:` lines of one event
// are joined with \n; comments (`:`) and other fields (event, id, retry) are ignored.
// Not thread-safe: one per stream.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace lemma::bench::serving {

class SseParser {
 public:
  using OnData = std::function<void(const std::string& payload)>;
  explicit SseParser(OnData on_data) : on_data_(std::move(on_data)) {}
  void feed(std::string_view bytes);
  // True when the stream stopped mid-line or mid-event (bytes after the last blank line).
  bool has_partial_event() const { return !line_.empty() || has_data_; }

 private:
  void line(std::string_view text);
  OnData on_data_;
  std::string line_;  // the current, unfinished line
  std::string data_;  // data of the current event so far
  bool has_data_ = false;
};

}  // namespace lemma::bench::serving
