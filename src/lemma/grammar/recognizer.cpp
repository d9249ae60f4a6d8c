#include "lemma/grammar/recognizer.h"

#include "lemma/base/error.h"

namespace lemma::grammar {

bool Recognizer::can_feed(std::string_view bytes) const {
  int32_t s = history_.back();
  for (char c : bytes) {
    s = states_->step(s, static_cast<unsigned char>(c));
    if (s == kDeadState) return false;
  }
  return true;
}

bool Recognizer::feed(std::string_view bytes) {
  const size_t start = history_.size();
  for (char c : bytes) {
    const int32_t s = states_->step(history_.back(), static_cast<unsigned char>(c));
    if (s == kDeadState) {
      history_.resize(start);
      return false;
    }
    history_.push_back(s);
  }
  return true;
}

bool Recognizer::feed_token(int32_t token, bool not_text, std::string_view bytes) {
  const int32_t s = history_.back();
  int32_t next = states_->step_token(s, token, not_text);
  if (!bytes.empty()) {
    int32_t b = s;
    for (char c : bytes) {
      b = states_->step(b, static_cast<unsigned char>(c));
      if (b == kDeadState) break;
    }
    next = states_->merge(next, b);
  }
  if (next == kDeadState) return false;
  history_.push_back(next);
  return true;
}

std::string Recognizer::forced_bytes(size_t max_bytes) const {
  std::string out;
  int32_t s = history_.back();
  while (out.size() < max_bytes && !states_->accepting(s) && !states_->has_token_edges(s)) {
    // Candidates from the stack tops' edges, confirmed by stepping (a step may still die, e.g. at
    // a slot guard); two live bytes make a choice point.
    const std::bitset<256> candidates = states_->edge_bytes(s);
    int only = -1;
    int32_t next = kDeadState;
    for (unsigned b = 0; b < 256; ++b) {
      if (!candidates.test(b)) continue;
      const int32_t t = states_->step(s, static_cast<unsigned char>(b));
      if (t == kDeadState) continue;
      if (only >= 0) {
        only = -2;
        break;
      }
      only = static_cast<int>(b);
      next = t;
    }
    if (only < 0) break;
    out += static_cast<char>(only);
    s = next;
  }
  // Leave out a trailing character whose bytes are not all forced.
  size_t lead = out.size();
  while (lead > 0 && (static_cast<unsigned char>(out[lead - 1]) & 0xC0) == 0x80 && out.size() - lead < 3) --lead;
  if (lead > 0) {
    const auto b = static_cast<unsigned char>(out[lead - 1]);
    const size_t length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    if (out.size() - (lead - 1) < length) out.resize(lead - 1);
  }
  return out;
}

void Recognizer::rollback_to(size_t position) {
  if (position > this->position()) fail<InvalidArgument>("grammar: cannot roll back to byte {} of {}", position, this->position());
  history_.resize(position + 1);
}

}  // namespace lemma::grammar
