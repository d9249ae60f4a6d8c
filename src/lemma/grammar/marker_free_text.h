// Free text that never contains a marker: what a lazy grammar reads before a trigger (the text a
// model may write before `<tool_call>`, which then starts a constrained call). Any bytes, invalid
// UTF-8 included (byte-fallback tokens), as long as `marker` does not occur; the text may end in
// the middle of one, so `marker_free_text(m)` followed by `literal(m)` reads every text whose
// first occurrence of m is at its end.
#pragma once

#include <string_view>

#include "lemma/grammar/expr.h"

namespace lemma::grammar {

// Throws InvalidArgument when `marker` is empty or its first byte occurs again in it (the
// expression relies on that: a mismatch can then only restart the marker at its first byte).
ExprPtr marker_free_text(std::string_view marker);

// Text that does not begin with `prefix` after white space (" \t\n\r"; prefix's bytes are matched
// with any run of white space allowed where `prefix` has one space, so `{ "name"` and `{"name"`
// count alike for the prefix `{ "name"`). Throws InvalidArgument for an empty prefix.
ExprPtr text_not_starting_with(std::string_view prefix);

}  // namespace lemma::grammar
