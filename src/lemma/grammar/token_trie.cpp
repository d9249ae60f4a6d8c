#include "lemma/grammar/token_trie.h"

#include <algorithm>

namespace lemma::grammar {

namespace {
constexpr std::pair<uint8_t, uint8_t> kCont{0x80, 0xBF};
constexpr Utf8Form kStringCharForms[] = {
    {1, {{{0x20, 0x21}}}},
    {1, {{{0x23, 0x5B}}}},
    {1, {{{0x5D, 0x7F}}}},
    {2, {{{0xC2, 0xDF}, kCont}}},
    {3, {{{0xE0, 0xE0}, {0xA0, 0xBF}, kCont}}},
    {3, {{{0xE1, 0xEC}, kCont, kCont}}},
    {3, {{{0xED, 0xED}, {0x80, 0x9F}, kCont}}},
    {3, {{{0xEE, 0xEF}, kCont, kCont}}},
    {4, {{{0xF0, 0xF0}, {0x90, 0xBF}, kCont, kCont}}},
    {4, {{{0xF1, 0xF3}, kCont, kCont, kCont}}},
    {4, {{{0xF4, 0xF4}, {0x80, 0x8F}, kCont, kCont}}},
};
}  // namespace

std::span<const Utf8Form> string_char_forms() { return kStringCharForms; }

int string_char_count(std::string_view bytes) {
  size_t i = 0;
  int count = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<uint8_t>(bytes[i]);
    const Utf8Form* form = nullptr;
    for (const Utf8Form& f : kStringCharForms) {
      if (f.ranges[0].first <= lead && lead <= f.ranges[0].second) form = &f;
    }
    if (!form || bytes.size() - i < form->length) return -1;
    for (size_t k = 1; k < form->length; ++k) {
      const auto b = static_cast<uint8_t>(bytes[i + k]);
      if (b < form->ranges[k].first || b > form->ranges[k].second) return -1;
    }
    i += form->length;
    ++count;
  }
  return count;
}

TokenTrie::TokenTrie(const TokenVocabulary& vocab) {
  std::vector<int32_t> all;
  std::array<std::vector<int32_t>, kStringCharLimits.size()> other;
  for (auto& m : string_char_tokens_) m.assign((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const std::string& s = vocab.bytes[static_cast<size_t>(id)];
    if (s.empty() || vocab.special[static_cast<size_t>(id)]) continue;
    all.push_back(id);
    const int chars = string_char_count(s);
    for (size_t i = 0; i < kStringCharLimits.size(); ++i) {
      if (chars >= 0 && static_cast<uint32_t>(chars) <= kStringCharLimits[i]) {
        string_char_tokens_[i][static_cast<size_t>(id) >> 6] |= uint64_t{1} << (static_cast<size_t>(id) & 63);
      } else {
        other[i].push_back(id);
      }
    }
  }
  build(vocab, std::move(all));
  for (size_t i = 0; i < kStringCharLimits.size(); ++i) {
    auto rest = std::shared_ptr<TokenTrie>(new TokenTrie());
    rest->build(vocab, std::move(other[i]));
    other_[i] = std::move(rest);
  }
}

void TokenTrie::build(const TokenVocabulary& vocab, std::vector<int32_t> order) {
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return vocab.bytes[static_cast<size_t>(a)] < vocab.bytes[static_cast<size_t>(b)];
  });
  std::vector<uint32_t> open;  // node index per depth-1 of the current path
  std::string path;
  auto close_to = [&](size_t depth) {
    while (open.size() > depth) {
      nodes_[open.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      nodes_[open.back()].subtree_tokens_end = static_cast<uint32_t>(token_ids_.size());
      open.pop_back();
    }
  };
  for (int32_t id : order) {
    const std::string& s = vocab.bytes[static_cast<size_t>(id)];
    size_t common = 0;
    while (common < path.size() && common < s.size() && path[common] == s[common]) ++common;
    close_to(common);
    path.resize(common);
    for (size_t i = common; i < s.size(); ++i) {
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      // first_token: where this subtree's tokens begin (sorted order lists them together).
      const auto next_token = static_cast<uint32_t>(token_ids_.size());
      nodes_.push_back({static_cast<unsigned char>(s[i]), true, static_cast<uint32_t>(i + 1), 0, next_token, next_token, 0});
      path.push_back(s[i]);
    }
    max_depth_ = std::max(max_depth_, static_cast<uint32_t>(s.size()));
    // Sorted order puts equal strings together: their ids all end at this node.
    Node& end = nodes_[open.back()];
    token_ids_.push_back(id);
    end.last_token = static_cast<uint32_t>(token_ids_.size());
    // The suffix after depth d is ASCII string characters iff every byte from d on is one.
    size_t ascii_from = s.size();
    while (ascii_from > 0 && is_ascii_string_char(static_cast<unsigned char>(s[ascii_from - 1]))) --ascii_from;
    for (size_t depth = 1; depth < ascii_from; ++depth) nodes_[open[depth - 1]].ascii_suffixes = false;
  }
  close_to(0);
}

}  // namespace lemma::grammar
