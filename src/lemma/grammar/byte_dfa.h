// Deterministic automata over bytes, for where the JSON Schema compiler must reason about regular
// languages instead of only spelling them: which keys a patternProperties regex covers, the keys no
// pattern covers (a complement), the keys that are none of the named properties, a pattern's
// strings cut to a length. Built from rule-free expressions (regex_to_expr's output) by subset
// construction; combined by running several side by side (a product).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "lemma/grammar/expr.h"

namespace lemma::grammar {

class ByteDfa {
 public:
  static constexpr int32_t kDead = -1;
  // `e` may hold bytes, sequences, alternations, repetitions and automata (no rules, tokens or
  // slots). Throws Unsupported when the automaton would need more than `max_states` states.
  static ByteDfa from_expr(const ExprPtr& e, size_t max_states);

  size_t size() const { return next_.size(); }
  int32_t next(int32_t state, unsigned char b) const { return next_[static_cast<size_t>(state)][b]; }
  bool accepting(int32_t state) const { return accepting_[static_cast<size_t>(state)]; }
  bool matches(std::string_view text) const;

 private:
  std::vector<std::array<int32_t, 256>> next_;  // state 0 starts
  std::vector<bool> accepting_;
};

// Several automata read the same bytes side by side. A state is the tuple of their states (a
// component that died stays dead: a complement needs to know); the product dies when part 0 (the
// universe of strings considered) dies. `signature` bit i: part i accepts in that state.
struct DfaProduct {
  std::vector<std::array<int32_t, 256>> next;  // ByteDfa::kDead where part 0 dies
  std::vector<uint64_t> signature;
};
// Throws Unsupported past `max_states` states (or more than 64 parts).
DfaProduct dfa_product(const std::vector<const ByteDfa*>& parts, size_t max_states);

// The strings that end in a state whose signature `keep` takes, as a grammar expression. States
// from which no such state can be reached are left out, so every prefix the expression reads can
// still be completed (nothing() when none can).
ExprPtr product_expr(const DfaProduct& p, const std::function<bool(uint64_t)>& keep);

// The strings of `text` with between `min` and `max` (kUnbounded: no upper bound) characters, where
// a character ends wherever `chars` (an automaton of runs of characters, e.g. a JSON string's
// inside) comes back to an accepting state: a pattern cut to a length. Throws Unsupported past
// `max_states` states (about the pattern's states times the bound).
ExprPtr length_bounded_expr(const ByteDfa& text, const ByteDfa& chars, int min, int max, size_t max_states);

}  // namespace lemma::grammar
