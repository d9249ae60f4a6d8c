// Grammars of plain text (not JSON): one of a list of strings (vLLM's guided_choice), or a regular
// expression the whole output must match (guided_regex).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

// Throws InvalidArgument for an empty list.
Grammar choice_grammar(const std::vector<std::string>& choices);
// Throws Unsupported naming a regex feature it cannot honour (regex.h).
Grammar regex_grammar(std::string_view pattern);

}  // namespace lemma::grammar
