// Byte-level incremental recognizer: feed bytes, ask whether bytes could be fed, roll back to any
// earlier position (the history of states is kept), and ask whether the input is complete. Where
// the grammar has token edges, a whole token is fed with feed_token (one position).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lemma/grammar/parser_states.h"

namespace lemma::grammar {

class Recognizer {
 public:
  explicit Recognizer(ParserStates& states) : states_(&states), history_{states.initial()} {}

  // Feeds all of `bytes` or none of them; false when the grammar refuses them.
  bool feed(std::string_view bytes);
  bool can_feed(std::string_view bytes) const;
  // Feeds one whole token: through the current state's token edges (ParserStates::step_token) and,
  // when `bytes` is not empty, as those bytes too; the configurations of both ways are kept. One
  // position; false (nothing changes) when neither way reads it.
  bool feed_token(int32_t token, bool not_text, std::string_view bytes);
  // Positions fed so far: bytes, and one per feed_token (the number of positions one can roll back
  // to, minus one).
  size_t position() const { return history_.size() - 1; }
  void rollback_to(size_t position);
  bool accepting() const { return states_->accepting(history_.back()); }
  bool finished() const { return states_->finished(history_.back()); }
  int32_t state() const { return history_.back(); }
  // Jump-forward: the longest byte string (at most `max_bytes`) that is the grammar's only
  // continuation from here. It stops where two or more bytes may follow, and where the input is
  // complete (ending is a choice too); a multi-byte character cut by either is left out whole,
  // so the result is whole UTF-8 characters when the grammar's text is, and where a token edge is
  // live (a token is no byte string). Nothing is fed.
  std::string forced_bytes(size_t max_bytes) const;
  ParserStates& states() const { return *states_; }

 private:
  ParserStates* states_;
  std::vector<int32_t> history_;  // history_[i]: the state after i positions
};

}  // namespace lemma::grammar
