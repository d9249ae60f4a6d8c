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

void TokenMatcher::compute_mask(int32_t state, TokenMask& mask) {
  mask.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  ParserStates& ps = recognizer_.states();
  const auto& nodes = trie_->nodes();
  const auto& ids = trie_->token_ids();
  walk_states_.resize(trie_->max_depth() + 1);
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
    for (uint32_t t = n.first_token; t < n.last_token; ++t) {
      const auto id = static_cast<size_t>(ids[t]);
      mask[id >> 6] |= uint64_t{1} << (id & 63);
    }
    ++i;
  }
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
  if (is_end_id(token)) {
    if (!recognizer_.accepting()) return false;
    token_starts_.push_back(recognizer_.position());
    ended_ = true;
    return true;
  }
  if (vocab_->special[static_cast<size_t>(token)]) return false;
  const size_t before = recognizer_.position();
  if (!recognizer_.feed(vocab_->bytes[static_cast<size_t>(token)])) return false;
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
