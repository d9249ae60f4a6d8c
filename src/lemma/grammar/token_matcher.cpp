#include "lemma/grammar/token_matcher.h"

#include <algorithm>

#include "lemma/base/error.h"

namespace lemma::grammar {

const TokenMask& MaskCache::store(int32_t state, TokenMask mask) {
  if (masks_.size() >= max_entries_) masks_.clear();  // crude bound on memory; states recur
  return masks_[state] = std::move(mask);
}

TokenMatcher::TokenMatcher(ParserStates& states, const TokenVocabulary& vocab, const TokenTrie& trie, MaskCache* cache)
    : recognizer_(states), vocab_(&vocab), trie_(&trie), cache_(cache) {}

bool TokenMatcher::is_end_id(int32_t token) const {
  return std::find(vocab_->end_ids.begin(), vocab_->end_ids.end(), token) != vocab_->end_ids.end();
}

bool TokenMatcher::is_text_token(int32_t token) const {
  return !vocab_->special[static_cast<size_t>(token)] && !is_end_id(token);
}

void TokenMatcher::add_token_edges(int32_t state, TokenMask& mask) {
  ParserStates& ps = recognizer_.states();
  bool any_negated = false;
  ps.token_edge_ids(state, edge_ids_, any_negated);
  // The tokens the edges name are decided one by one below, keeping what the byte walk allowed.
  edge_bits_.clear();
  for (int32_t id : edge_ids_) {
    if (id < vocab_->size()) edge_bits_.emplace_back(id, mask_allows(mask, id));
  }
  if (any_negated && ps.step_other_token(state) != kDeadState) {
    if (text_tokens_.empty()) {
      text_tokens_.assign(mask.size(), 0);
      for (int32_t id = 0; id < vocab_->size(); ++id) {
        if (is_text_token(id))
          text_tokens_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (static_cast<size_t>(id) & 63);
      }
    }
    for (size_t w = 0; w < mask.size(); ++w) mask[w] |= text_tokens_[w];
  }
  for (const auto& [id, by_bytes] : edge_bits_) {
    const bool allowed = by_bytes || ps.step_token(state, id, !is_text_token(id)) != kDeadState;
    const uint64_t bit = uint64_t{1} << (static_cast<size_t>(id) & 63);
    if (allowed) mask[static_cast<size_t>(id) >> 6] |= bit;
    else mask[static_cast<size_t>(id) >> 6] &= ~bit;
  }
}

bool TokenMatcher::reads_any_ascii_string_chars(int32_t state) {
  ParserStates& ps = recognizer_.states();
  if (ps.string_closed_memo(state) < 0) {
    int32_t closed_set[2] = {state, kDeadState};
    int size = 1;
    bool closed = true;
    for (int k = 0; k < size && closed; ++k) {
      for (unsigned b = 0x20; b <= 0x7F && closed; ++b) {
        if (!is_ascii_string_char(static_cast<unsigned char>(b))) continue;
        const int32_t t = ps.step(closed_set[k], static_cast<unsigned char>(b));
        if (t == kDeadState) {
          closed = false;
        } else if (t != closed_set[0] && t != closed_set[1]) {
          if (size == 2) closed = false;
          else closed_set[size++] = t;
        }
      }
    }
    ps.string_closed_memo(state) = closed ? 1 : 0;  // steps above may have moved the states
  }
  return ps.string_closed_memo(state) == 1;
}

uint32_t TokenMatcher::string_chars_readable(int32_t state, uint32_t up_to) {
  ParserStates& ps = recognizer_.states();
  const bool memoised = up_to == TokenTrie::kStringCharLimits[TokenTrie::kStringCharLimits.size() - 2];
  if (memoised && ps.string_chars_memo(state) != ParserStates::kNotComputed) return ps.string_chars_memo(state);
  const uint32_t readable = prove_string_chars(state, up_to);
  if (memoised) ps.string_chars_memo(state) = readable;
  return readable;
}

uint32_t TokenMatcher::prove_string_chars(int32_t state, uint32_t up_to) {
  ParserStates& ps = recognizer_.states();
  constexpr size_t kMaxStates = 2;  // more means no plain string body: give up early
  std::vector<int32_t>& seen = seen_states_;
  std::vector<int32_t>& level = level_states_;
  seen.assign(1, state);
  level.assign(1, state);
  for (uint32_t j = 0; j < up_to; ++j) {
    // The states after j + 1 characters, from those after j.
    std::vector<int32_t>& after = after_states_;
    after.clear();
    for (int32_t from : level) {
      for (const Utf8Form& form : string_char_forms()) {
        std::vector<int32_t>& at = form_states_;
        at.assign(1, from);
        for (size_t k = 0; k < form.length; ++k) {
          std::vector<int32_t>& next = form_next_;
          next.clear();
          for (int32_t s : at) {
            for (unsigned b = form.ranges[k].first; b <= form.ranges[k].second; ++b) {
              const int32_t t = ps.step(s, static_cast<unsigned char>(b));
              if (t == kDeadState) return j;
              if (std::find(next.begin(), next.end(), t) == next.end()) next.push_back(t);
            }
            if (next.size() > kMaxStates) return j;
          }
          at.swap(next);
        }
        for (int32_t t : at) {
          if (std::find(after.begin(), after.end(), t) != after.end()) continue;
          if (after.size() >= kMaxStates) return j;
          after.push_back(t);
        }
      }
    }
    // Every state seen so far has been expanded without a refusal: when no new one appears, any
    // run of characters stays among them.
    bool grew = false;
    for (int32_t t : after) {
      if (std::find(seen.begin(), seen.end(), t) == seen.end()) {
        seen.push_back(t);
        grew = true;
      }
    }
    if (!grew) return TokenTrie::kUnbounded;
    level.swap(after);
  }
  return up_to;
}

// Proving a state reads any ASCII run costs up to two rounds of 94 steps: below this many nodes
// walking the subtree is cheaper.
constexpr uint32_t kMinSkippedSubtree = 64;

void TokenMatcher::walk(const TokenTrie& trie, int32_t state, TokenMask& mask) {
  ParserStates& ps = recognizer_.states();
  const auto& nodes = trie.nodes();
  const auto& ids = trie.token_ids();
  walk_states_.resize(trie.max_depth() + 1);
  walk_states_[0] = state;
  size_t i = 0;
  while (i < nodes.size()) {
    const TokenTrie::Node& n = nodes[i];
    const int32_t next = ps.step(walk_states_[n.depth - 1], n.byte);
    if (next == kDeadState) {
      i = n.subtree_end;  // no token with this prefix fits
      continue;
    }
    walk_states_[n.depth] = next;
    const bool whole = n.ascii_suffixes && n.subtree_end > i + kMinSkippedSubtree && reads_any_ascii_string_chars(next);
    const uint32_t last = whole ? n.subtree_tokens_end : n.last_token;
    for (uint32_t t = n.first_token; t < last; ++t) {
      const auto id = static_cast<size_t>(ids[t]);
      mask[id >> 6] |= uint64_t{1} << (id & 63);
    }
    i = whole ? n.subtree_end : i + 1;
  }
}

void TokenMatcher::compute_mask(int32_t state, TokenMask& mask) {
  mask.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  ParserStates& ps = recognizer_.states();
  // Inside a string, tokens of string characters that the state surely reads need no walk: only
  // the other tokens (quotes, escapes, partial characters, longer runs) are walked.
  constexpr auto& limits = TokenTrie::kStringCharLimits;
  const uint32_t readable = string_chars_readable(state, limits[limits.size() - 2]);
  size_t use = limits.size();
  for (size_t i = 0; i < limits.size(); ++i) {
    if (limits[i] <= readable) use = i;
  }
  if (use < limits.size()) {
    mask = trie_->string_char_tokens(use);
    walk(trie_->other_tokens(use), state, mask);
  } else {
    walk(*trie_, state, mask);
  }
  if (ps.has_token_edges(state)) add_token_edges(state, mask);
  if (ps.accepting(state)) {
    for (int32_t id : vocab_->end_ids) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (static_cast<size_t>(id) & 63);
  }
}

const TokenMask& TokenMatcher::next_mask() {
  const int32_t state = recognizer_.state();
  if (ended_) {
    scratch_.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
    return scratch_;
  }
  if (cache_) {
    if (const TokenMask* hit = cache_->find(state)) return *hit;
    TokenMask mask;
    compute_mask(state, mask);
    return cache_->store(state, std::move(mask));
  }
  compute_mask(state, scratch_);
  return scratch_;
}

bool TokenMatcher::accept(int32_t token) {
  if (token < 0 || token >= vocab_->size()) fail<InvalidArgument>("grammar: token id {} out of range", token);
  if (ended_) return false;
  const auto& bytes = vocab_->bytes[static_cast<size_t>(token)];
  if (recognizer_.states().has_token_edges(recognizer_.state())) {
    const size_t before = recognizer_.position();
    const bool text = is_text_token(token);
    if (recognizer_.feed_token(token, !text, text ? std::string_view(bytes) : std::string_view())) {
      token_starts_.push_back(before);
      return true;
    }
  }
  if (is_end_id(token)) {
    if (!recognizer_.accepting()) return false;
    token_starts_.push_back(recognizer_.position());
    ended_ = true;
    return true;
  }
  if (vocab_->special[static_cast<size_t>(token)]) return false;
  const size_t before = recognizer_.position();
  if (!recognizer_.feed(bytes)) return false;
  token_starts_.push_back(before);
  return true;
}

void TokenMatcher::rollback(size_t n) {
  if (n > token_starts_.size()) fail<InvalidArgument>("grammar: cannot roll back {} tokens, only {} accepted", n, token_starts_.size());
  if (n == 0) return;
  const size_t position = token_starts_[token_starts_.size() - n];
  token_starts_.resize(token_starts_.size() - n);
  recognizer_.rollback_to(position);
  ended_ = false;
}

}  // namespace lemma::grammar
