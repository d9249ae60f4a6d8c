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

void Recognizer::rollback_to(size_t position) {
  if (position > this->position()) fail<InvalidArgument>("grammar: cannot roll back to byte {} of {}", position, this->position());
  history_.resize(position + 1);
}

}  // namespace lemma::grammar
