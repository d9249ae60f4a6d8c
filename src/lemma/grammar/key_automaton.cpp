#include "lemma/grammar/key_automaton.h"

#include <array>
#include <map>
#include <vector>

namespace lemma::grammar {

namespace {

// Where a UTF-8 character stands after some of its bytes: how many continuation bytes are still
// due and which values the next one may take (narrower after E0, ED, F0, F4: no overlong forms,
// no surrogates, nothing past U+10FFFF).
struct CharPosition {
  int remaining = 0;
  unsigned char lo = 0x80, hi = 0xBF;
};

CharPosition after_lead(unsigned char b) {
  if (b < 0x80) return {0, 0x80, 0xBF};
  if (b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b <= 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {3, 0x80, 0xBF};
}

bool is_plain_ascii(unsigned char b) { return b >= 0x20 && b < 0x80 && b != '"' && b != '\\'; }
bool is_lead(unsigned char b) { return b >= 0xC2 && b <= 0xF4; }

class Builder {
 public:
  explicit Builder(const std::set<std::string>& names) {
    trie_.emplace_back();
    for (const auto& name : names) insert(name);
  }

  std::shared_ptr<const ByteAutomaton> build() {
    // Shared states after the trie: any text (free), and the rest of a character begun off the trie.
    const auto n = static_cast<uint32_t>(trie_.size());
    free_ = n;
    for (int r = 1; r <= 3; ++r) rest_[static_cast<size_t>(r)] = n + static_cast<uint32_t>(r);  // r bytes of 80-BF due
    // Second bytes with narrow ranges, then 1 or 2 more due.
    const uint32_t after_e0 = n + 4, after_ed = n + 5, after_f0 = n + 6, after_f4 = n + 7;
    auto a = std::make_shared<ByteAutomaton>();
    a->edges.resize(n + 8);
    a->accepting.assign(n + 8, false);
    std::array<int64_t, 256> row;
    auto emit = [&](uint32_t state) {
      int b = 0;
      while (b < 256) {
        int hi = b;
        while (hi + 1 < 256 && row[static_cast<size_t>(hi + 1)] == row[static_cast<size_t>(b)]) ++hi;
        if (row[static_cast<size_t>(b)] >= 0) {
          a->edges[state].push_back({static_cast<unsigned char>(b), static_cast<unsigned char>(hi),
                                     static_cast<uint32_t>(row[static_cast<size_t>(b)])});
        }
        b = hi + 1;
      }
    };
    auto off_trie_boundary = [&] {
      row.fill(-1);
      for (int b = 0; b < 256; ++b) {
        const auto byte = static_cast<unsigned char>(b);
        if (is_plain_ascii(byte)) row[static_cast<size_t>(b)] = free_;
        else if (is_lead(byte)) row[static_cast<size_t>(b)] = lead_target(byte, after_e0, after_ed, after_f0, after_f4);
      }
    };
    for (uint32_t s = 0; s < n; ++s) {
      const Node& t = trie_[s];
      if (t.position.remaining == 0) {
        off_trie_boundary();
      } else {
        row.fill(-1);
        for (int b = t.position.lo; b <= t.position.hi; ++b) row[static_cast<size_t>(b)] = rest_after(t.position.remaining - 1);
      }
      for (const auto& [byte, child] : t.children) row[byte] = child;
      emit(s);
      a->accepting[s] = t.position.remaining == 0 && !t.is_name;
    }
    off_trie_boundary();
    emit(free_);
    a->accepting[free_] = true;
    for (int r = 1; r <= 3; ++r) {
      row.fill(-1);
      for (int b = 0x80; b <= 0xBF; ++b) row[static_cast<size_t>(b)] = rest_after(r - 1);
      emit(rest_[static_cast<size_t>(r)]);
    }
    const std::array<std::pair<uint32_t, CharPosition>, 4> narrow = {
        {{after_e0, after_lead(0xE0)}, {after_ed, after_lead(0xED)}, {after_f0, after_lead(0xF0)}, {after_f4, after_lead(0xF4)}}};
    for (const auto& [state, pos] : narrow) {
      row.fill(-1);
      for (int b = pos.lo; b <= pos.hi; ++b) row[static_cast<size_t>(b)] = rest_after(pos.remaining - 1);
      emit(state);
    }
    return a;
  }

 private:
  struct Node {
    std::map<unsigned char, uint32_t> children;
    bool is_name = false;
    CharPosition position;  // of the character being read after this node's bytes
  };

  void insert(const std::string& name) {
    for (char c : name) {
      if (!is_plain_ascii(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 0x80) return;  // needs an escape
    }
    uint32_t at = 0;
    for (char c : name) {
      const auto b = static_cast<unsigned char>(c);
      auto it = trie_[at].children.find(b);
      if (it == trie_[at].children.end()) {
        const CharPosition here = trie_[at].position;
        CharPosition next = here.remaining == 0 ? after_lead(b) : CharPosition{here.remaining - 1, 0x80, 0xBF};
        trie_.emplace_back();
        trie_.back().position = next;
        it = trie_[at].children.emplace(b, static_cast<uint32_t>(trie_.size() - 1)).first;
      }
      at = it->second;
    }
    trie_[at].is_name = true;
  }

  uint32_t rest_after(int remaining) const { return remaining == 0 ? free_ : rest_[static_cast<size_t>(remaining)]; }
  uint32_t lead_target(unsigned char b, uint32_t e0, uint32_t ed, uint32_t f0, uint32_t f4) const {
    if (b == 0xE0) return e0;
    if (b == 0xED) return ed;
    if (b == 0xF0) return f0;
    if (b == 0xF4) return f4;
    return rest_after(after_lead(b).remaining);
  }

  std::vector<Node> trie_;
  uint32_t free_ = 0;
  std::array<uint32_t, 4> rest_ = {};
};

}  // namespace

std::shared_ptr<const ByteAutomaton> plain_key_not_in(const std::set<std::string>& names) {
  return Builder(names).build();
}

}  // namespace lemma::grammar
