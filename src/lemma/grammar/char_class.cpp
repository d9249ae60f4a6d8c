#include "lemma/grammar/char_class.h"

#include <algorithm>

#include "lemma/tokenizer/utf8.h"

namespace lemma::grammar {

CharClass CharClass::range(uint32_t lo, uint32_t hi) {
  CharClass c;
  c.add(lo, hi);
  return c;
}

CharClass CharClass::any() { return range(0, kMaxCodePoint); }

void CharClass::add(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  // Surrogates are not characters: cut them out.
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) ranges_.push_back({lo, 0xD7FF});
    if (hi > 0xDFFF) ranges_.push_back({0xE000, hi});
  } else {
    ranges_.push_back({lo, hi});
  }
  normalize();
}

void CharClass::add(const CharClass& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  normalize();
}

void CharClass::normalize() {
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& r : ranges_) {
    if (!out.empty() && r.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  ranges_ = std::move(out);
}

CharClass CharClass::complement() const {
  CharClass c;
  uint32_t next = 0;
  for (const auto& r : ranges_) {
    if (r.first > next) c.ranges_.push_back({next, r.first - 1});
    next = r.second + 1;
  }
  if (next <= kMaxCodePoint) c.ranges_.push_back({next, kMaxCodePoint});
  CharClass out;
  for (const auto& r : c.ranges_) out.add(r.first, r.second);
  return out;
}

CharClass CharClass::intersect(const CharClass& other) const {
  CharClass c;
  for (const auto& a : ranges_) {
    for (const auto& b : other.ranges_) {
      const uint32_t lo = std::max(a.first, b.first), hi = std::min(a.second, b.second);
      if (lo <= hi) c.ranges_.push_back({lo, hi});
    }
  }
  c.normalize();
  return c;
}

bool CharClass::contains(uint32_t c) const {
  for (const auto& r : ranges_) {
    if (r.first <= c && c <= r.second) return true;
  }
  return false;
}

std::string utf8_encode(uint32_t c) {
  std::string s;
  tok::append_utf8(s, static_cast<char32_t>(c));
  return s;
}

namespace {

// Splits [lo, hi] (same encoded length) until every byte position of the encodings spans a plain
// byte range, then emits one byte-range sequence per piece.
void encode_range(uint32_t lo, uint32_t hi, std::vector<ExprPtr>& out) {
  const size_t n = utf8_encode(lo).size();
  for (size_t i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        encode_range(lo, lo | m, out);
        encode_range((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        encode_range(lo, (hi & ~m) - 1, out);
        encode_range(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = utf8_encode(lo), b = utf8_encode(hi);
  std::vector<ExprPtr> bytes_seq;
  for (size_t i = 0; i < n; ++i) {
    bytes_seq.push_back(byte_range(static_cast<unsigned char>(a[i]), static_cast<unsigned char>(b[i])));
  }
  out.push_back(seq(std::move(bytes_seq)));
}

}  // namespace

ExprPtr utf8_expr(const CharClass& cls) {
  std::vector<ExprPtr> branches;
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  for (const auto& r : cls.ranges()) {
    uint32_t lo = r.first;
    for (uint32_t end : kLengthEnds) {
      if (lo > r.second) break;
      if (lo > end) continue;
      const uint32_t hi = std::min(r.second, end);
      encode_range(lo, hi, branches);
      lo = hi + 1;
    }
  }
  return alt(std::move(branches));
}

}  // namespace lemma::grammar
