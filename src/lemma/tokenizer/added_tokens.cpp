#include "lemma/tokenizer/added_tokens.h"

#include <algorithm>

#include <utf8proc.h>

#include "lemma/tokenizer/normalizers.h"
#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {
namespace {

// Start of the code point that ends just before byte `end` (end > 0).
size_t code_point_start_before(std::string_view s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return b;
}

char32_t code_point_before(std::string_view s, size_t end) {
  size_t b = code_point_start_before(s, end);
  return next_code_point(s, b);
}

// HF tests these with Rust regex's Unicode classes, so they follow them rather than C/Python:
// \s is the White_Space property (Zs, Zl, Zp, \t..\r and U+0085 NEL).
bool is_whitespace(char32_t c) {
  if ((c >= '\t' && c <= '\r') || c == 0x85) return true;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

// \w is Alphabetic (letters, Nl, Other_Alphabetic), marks, Nd, Pc and Join_Control; unlike
// Python, other numbers (No: "²", "½") are not word characters.
bool is_word_char(char32_t c) {
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  // The Other_Alphabetic symbols (So): circled, parenthesised and squared Latin letters.
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
      (c >= 0x1F170 && c <= 0x1F189)) {
    return true;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

// single_word: the match [b, e) neither follows nor precedes a word character.
bool stands_alone(std::string_view text, size_t b, size_t e) {
  if (b > 0 && is_word_char(code_point_before(text, b))) return false;
  size_t p = e;
  return e == text.size() || !is_word_char(next_code_point(text, p));
}

// Start of the run of whitespace that ends at `end`.
size_t whitespace_run_start(std::string_view text, size_t end) {
  while (end > 0 && is_whitespace(code_point_before(text, end))) end = code_point_start_before(text, end);
  return end;
}

// End of the run of whitespace that starts at `begin`.
size_t whitespace_run_end(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    size_t p = begin;
    if (!is_whitespace(next_code_point(text, p))) break;
    begin = p;
  }
  return begin;
}

}  // namespace

void AddedTokens::Trie::insert(const std::string& key, int32_t token) {
  int32_t node = 0;
  for (unsigned char c : key) {
    auto it = nodes[static_cast<size_t>(node)].children.find(c);
    if (it == nodes[static_cast<size_t>(node)].children.end()) {
      nodes.push_back(Node{});
      const auto child = static_cast<int32_t>(nodes.size() - 1);
      nodes[static_cast<size_t>(node)].children.emplace(c, child);
      node = child;
    } else {
      node = it->second;
    }
  }
  if (nodes[static_cast<size_t>(node)].token < 0) nodes[static_cast<size_t>(node)].token = token;
}

AddedTokens::AddedTokens(std::vector<AddedToken> tokens, const Normalizer* normalizer) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    if (t.content.empty()) continue;  // HF ignores empty added tokens
    // HF matches a normalized token by its content passed through the normalizer, since that
    // is the text it meets in a normalized piece.
    const std::string key = t.normalized && normalizer ? normalizer->apply(t.content) : t.content;
    if (key.empty()) continue;
    (t.normalized ? normalized_trie_ : raw_trie_).insert(key, static_cast<int32_t>(i));
    longest_ = std::max({longest_, key.size(), t.content.size()});
  }
}

std::pair<int32_t, size_t> AddedTokens::longest_match(const Trie& trie, std::string_view text, size_t pos,
                                                      std::span<const ByteRange> marks) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto& children = trie.nodes[static_cast<size_t>(node)].children;
    auto it = children.find(static_cast<unsigned char>(text[i]));
    if (it == children.end()) break;
    node = it->second;
    const int32_t t = trie.nodes[static_cast<size_t>(node)].token;
    if (t < 0) continue;
    // Request bytes can never spell a special token: to the trie it is not there at all.
    if (tokens_[static_cast<size_t>(t)].special && MarkedText::overlaps(marks, pos, i + 1)) continue;
    best = {t, i + 1 - pos};
  }
  return best;
}

// The loop mirrors HF's find_matches: `pos` walks the non-overlapping leftmost-longest matches,
// `text_start` is where the text not yet given to a token begins. rstrip moves only
// `text_start`, so (as in HF) a token found inside whitespace an rstrip token swallowed is
// still emitted, and the text after it is taken from its end.
std::vector<Segment> AddedTokens::split(std::string_view text, bool normalized_phase, bool parse_special,
                                        std::span<const ByteRange> marks) const {
  const Trie& trie = normalized_phase ? normalized_trie_ : raw_trie_;
  std::vector<Segment> out;
  if (trie.nodes.size() == 1) {
    if (!text.empty()) out.push_back({std::string(text), -1, 0});
    return out;
  }
  size_t text_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto [t, len] = longest_match(trie, text, pos, marks);
    if (t < 0) {
      pos += utf8_len(static_cast<unsigned char>(text[pos]));
      continue;
    }
    const AddedToken& tok = tokens_[static_cast<size_t>(t)];
    size_t b = pos, e = pos + len;
    pos = e;
    if (tok.special && !parse_special) continue;
    if (tok.single_word && !stands_alone(text, b, e)) continue;
    // Whitespace already given to an earlier token stays with it.
    if (tok.lstrip) b = std::max(whitespace_run_start(text, b), text_start);
    if (tok.rstrip) e = whitespace_run_end(text, e);
    if (b > text_start) out.push_back({std::string(text.substr(text_start, b - text_start)), -1, text_start});
    out.push_back({tok.content, tok.id, b});
    text_start = e;
  }
  if (text_start < text.size()) out.push_back({std::string(text.substr(text_start)), -1, text_start});
  return out;
}

}  // namespace lemma::tok
