// Sets of Unicode code points (what a regex class or "any JSON string character" means) and their
// translation into byte-level grammar expressions over UTF-8.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "lemma/grammar/expr.h"

namespace lemma::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Sorted, disjoint, non-adjacent inclusive ranges of code points (surrogates are never members).
class CharClass {
 public:
  CharClass() = default;
  static CharClass range(uint32_t lo, uint32_t hi);
  static CharClass single(uint32_t c) { return range(c, c); }
  static CharClass any();  // every scalar value

  void add(uint32_t lo, uint32_t hi);
  void add(const CharClass& other);
  CharClass complement() const;
  CharClass minus(const CharClass& other) const { return intersect(other.complement()); }
  CharClass intersect(const CharClass& other) const;
  bool contains(uint32_t c) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  void normalize();
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// One character of the class, spelled in UTF-8.
ExprPtr utf8_expr(const CharClass& cls);
// The UTF-8 encoding of one code point.
std::string utf8_encode(uint32_t c);

}  // namespace lemma::grammar
