#include "lemma/grammar/marker_free_text.h"

#include <bitset>
#include <string>
#include <vector>

#include "lemma/base/error.h"

namespace lemma::grammar {

namespace {

std::bitset<256> all_but(std::initializer_list<unsigned char> excluded) {
  std::bitset<256> set;
  set.set();
  for (unsigned char c : excluded) set.reset(c);
  return set;
}

ExprPtr any_text() { return star(byte_range(0, 255)); }

}  // namespace

ExprPtr marker_free_text(std::string_view marker) {
  if (marker.empty()) fail<InvalidArgument>("marker_free_text: empty marker");
  const auto first = static_cast<unsigned char>(marker[0]);
  if (marker.find(marker[0], 1) != std::string_view::npos)
    fail<InvalidArgument>("marker_free_text: the marker '{}' repeats its first byte", marker);
  const size_t n = marker.size();
  ExprPtr other = bytes(all_but({first}));
  if (n == 1) return star(other);
  // The text splits into pieces that each leave the marker unmatched: a byte other than its first
  // (N), or an attempt at it (its first byte and some of the next ones) that fails on a byte which
  // neither goes on with it nor starts it again (B). Attempts cut short by a new first byte, and
  // the last one at the end of the text, are proper prefixes of the marker (G).
  std::vector<ExprPtr> prefixes;
  for (size_t k = 1; k < n; ++k) prefixes.push_back(literal(marker.substr(0, k)));
  const ExprPtr partial = alt(std::move(prefixes));
  ExprPtr rest = bytes(all_but({static_cast<unsigned char>(marker[n - 1]), first}));
  for (size_t k = n - 1; k-- > 1;) {
    const auto next = static_cast<unsigned char>(marker[k]);
    rest = alt({bytes(all_but({next, first})), seq({literal(marker.substr(k, 1)), rest})});
  }
  const ExprPtr failed_attempt = seq({literal(marker.substr(0, 1)), rest});
  return seq({star(alt({other, seq({star(partial), failed_attempt})})), star(partial)});
}

ExprPtr text_not_starting_with(std::string_view prefix) {
  struct Element {
    bool space_before;
    unsigned char byte;
  };
  std::vector<Element> elements;
  bool space = true;  // white space may lead the text
  for (char c : prefix) {
    if (c == ' ') {
      space = true;
      continue;
    }
    elements.push_back({space, static_cast<unsigned char>(c)});
    space = false;
  }
  if (elements.empty()) fail<InvalidArgument>("text_not_starting_with: empty prefix");
  std::bitset<256> ws;
  for (unsigned char c : {' ', '\t', '\n', '\r'}) ws.set(c);
  // Built from the end: what may follow once elements [0, i) matched, without completing the rest.
  ExprPtr after = nothing();  // all of the prefix matched: refused
  for (size_t i = elements.size(); i-- > 0;) {
    const Element& e = elements[i];
    std::bitset<256> mismatch = all_but({e.byte});
    if (e.space_before) mismatch &= ~ws;  // white space is read by the run before the element
    ExprPtr body = alt({empty(), seq({bytes(mismatch), any_text()}),
                        seq({literal(std::string(1, static_cast<char>(e.byte))), after})});
    after = e.space_before ? seq({star(bytes(ws)), body}) : body;
  }
  return after;
}

}  // namespace lemma::grammar
