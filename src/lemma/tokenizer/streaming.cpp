#include "lemma/tokenizer/streaming.h"

#include "lemma/base/error.h"
#include "lemma/tokenizer/utf8.h"

namespace lemma {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tok, bool skip_special)
    : tok_(tok), skip_special_(skip_special) {}

void StreamingDetokenizer::prime(std::span<const int32_t> prompt) {
  context_.clear();
  pending_.clear();
  for (auto it = prompt.rbegin(); it != prompt.rend(); ++it) {
    if (*it >= 0 && *it < tok_.vocab_size() && !(skip_special_ && tok_.is_special(*it))) {
      context_.assign(1, *it);
      break;
    }
  }
  context_text_ = tok_.decode_raw(context_, skip_special_);
  emitted_ = 0;
}

std::string StreamingDetokenizer::push(int32_t id) {
  if (id < 0 || id >= tok_.vocab_size()) {
    // Rejected before any state changes, so the stream stays usable.
    fail<InvalidArgument>("token id {} is outside the vocabulary (size {})", id, tok_.vocab_size());
  }
  pending_.push_back(id);
  std::vector<int32_t> window = context_;
  window.insert(window.end(), pending_.begin(), pending_.end());
  const std::string all = tok_.decode_raw(window, skip_special_);
  // The context's text is normally a prefix of the window's; if a decoder rule changed it,
  // fall back to emitting relative to the common length.
  const size_t base = all.compare(0, context_text_.size(), context_text_) == 0
                          ? context_text_.size()
                          : std::min(context_text_.size(), all.size());
  const std::string_view fresh = std::string_view(all).substr(std::min(all.size(), base + emitted_));
  const size_t complete = tok::complete_utf8_prefix(fresh);
  std::string out = tok::sanitize_utf8(fresh.substr(0, complete));
  emitted_ += complete;
  if (complete == fresh.size()) {
    // Everything is out: the last visible id becomes the context for the next one (a skipped
    // special token would make the next token look like the first and lose its space).
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
      if (!(skip_special_ && tok_.is_special(*it))) {
        context_.assign(1, *it);
        break;
      }
    }
    pending_.clear();
    context_text_ = tok_.decode_raw(context_, skip_special_);
    emitted_ = 0;
  }
  return out;
}

std::string StreamingDetokenizer::flush() {
  if (pending_.empty()) return {};
  std::vector<int32_t> window = context_;
  window.insert(window.end(), pending_.begin(), pending_.end());
  const std::string all = tok_.decode_raw(window, skip_special_);
  const size_t base = all.compare(0, context_text_.size(), context_text_) == 0 ? context_text_.size()
                                                                                 : std::min(context_text_.size(), all.size());
  std::string out = tok::sanitize_utf8(std::string_view(all).substr(std::min(all.size(), base + emitted_)));
  context_.clear();
  pending_.clear();
  context_text_.clear();
  emitted_ = 0;
  return out;
}

}  // namespace lemma
