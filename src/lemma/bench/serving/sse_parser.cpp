#include "lemma/bench/serving/sse_parser.h"

namespace lemma::bench::serving {

void SseParser::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (c != '\n') {
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    const std::string text = std::move(line_);
    line_.clear();
    line(text);
  }
}

void SseParser::line(std::string_view text) {
  if (text.empty()) {  // end of event
    if (has_data_) on_data_(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  if (text.front() == ':') return;  // comment
  const size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  if (field != "data") return;
  std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_ += value;
  has_data_ = true;
}

}  // namespace lemma::bench::serving
