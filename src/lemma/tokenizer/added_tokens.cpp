#include "lemma/tokenizer/added_tokens.h"

#include <utf8proc.h>

#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {
namespace {

// Code point ending just before byte `end` (end > 0).
char32_t code_point_before(std::string_view s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return next_code_point(s, b);
}

bool is_whitespace(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return true;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_word_char(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return c == '_' || (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO) ||
         (cat >= UTF8PROC_CATEGORY_MN && cat <= UTF8PROC_CATEGORY_ME);
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

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    (tokens_[i].normalized ? normalized_trie_ : raw_trie_).insert(tokens_[i].content, static_cast<int32_t>(i));
  }
}

std::pair<int32_t, size_t> AddedTokens::longest_match(const Trie& trie, std::string_view text, size_t pos,
                                                      bool parse_special, std::span<const ByteRange> marks) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto& children = trie.nodes[static_cast<size_t>(node)].children;
    auto it = children.find(static_cast<unsigned char>(text[i]));
    if (it == children.end()) break;
    node = it->second;
    const int32_t t = trie.nodes[static_cast<size_t>(node)].token;
    if (t < 0) continue;
    const bool special = tokens_[static_cast<size_t>(t)].special;
    if (!special || (parse_special && !MarkedText::overlaps(marks, pos, i + 1))) best = {t, i + 1 - pos};
  }
  return best;
}

std::vector<Segment> AddedTokens::split(std::string_view text, bool normalized_phase, bool parse_special,
                                        std::span<const ByteRange> marks) const {
  const Trie& trie = normalized_phase ? normalized_trie_ : raw_trie_;
  std::vector<Segment> out;
  if (trie.nodes.size() == 1) {
    if (!text.empty()) out.push_back({std::string(text), -1, 0});
    return out;
  }
  size_t text_start = 0;  // start of the pending plain-text run
  size_t pos = 0;
  while (pos < text.size()) {
    auto [t, len] = longest_match(trie, text, pos, parse_special, marks);
    if (t >= 0) {
      const AddedToken& tok = tokens_[static_cast<size_t>(t)];
      size_t b = pos, e = pos + len;
      bool ok = true;
      if (tok.single_word) {
        ok = (b == 0 || !is_word_char(code_point_before(text, b)));
        if (ok && e < text.size()) {
          size_t p = e;
          ok = !is_word_char(next_code_point(text, p));
        }
      }
      if (ok) {
        if (tok.lstrip) {
          while (b > text_start && is_whitespace(code_point_before(text, b))) {
            size_t s = b - 1;
            while (s > text_start && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
            b = s;
          }
        }
        if (tok.rstrip) {
          while (e < text.size()) {
            size_t p = e;
            if (!is_whitespace(next_code_point(text, p))) break;
            e = p;
          }
        }
        if (b > text_start) out.push_back({std::string(text.substr(text_start, b - text_start)), -1, text_start});
        out.push_back({tok.content, tok.id, b});
        pos = text_start = e;
        continue;
      }
    }
    pos += utf8_len(static_cast<unsigned char>(text[pos]));
  }
  if (text_start < text.size()) out.push_back({std::string(text.substr(text_start)), -1, text_start});
  return out;
}

}  // namespace lemma::tok
