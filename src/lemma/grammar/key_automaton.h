// The keys of an object's extra members: JSON key text written without escapes that is none of
// the named properties. Built directly as a byte automaton (a trie of the names whose every other
// way out leads to a state reading any further characters), so it costs one grammar node per trie
// node: spelled as an expression (a choice of the other characters at every trie node) the same
// language took ~10x the nodes, which made large schemas slow to compile.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "lemma/grammar/expr.h"

namespace lemma::grammar {

// UTF-8 text of characters from U+0020 up except '"' and '\\' (no escapes needed), none of `names`.
std::shared_ptr<const ByteAutomaton> plain_key_not_in(const std::set<std::string>& names);

}  // namespace lemma::grammar
