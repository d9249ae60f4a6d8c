// The recognizer's states, built lazily as a DFA over a Grammar. A parser configuration is a set
// of call stacks; each stack is a Frame (node, parent frame, the invocation's slot marks),
// hash-consed so that equal stacks are one id. A State is the sorted set of stack tops that can read a byte (after following empty
// edges, calls and returns), plus whether the input so far is a complete sentence. States are
// interned too, and each state's 256 successors are cached, so a byte step that was seen before
// costs one array read (what makes walking a token trie affordable). Stack tops with token edges
// (grammar.h) belong to the state too; step_token() reads a whole token through them.
// Not thread-safe: one ParserStates per thread (or per request).
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

inline constexpr int32_t kDeadState = -1;

class ParserStates {
 public:
  explicit ParserStates(std::shared_ptr<const Grammar> grammar);

  int32_t initial() const { return initial_; }
  // The state after reading `byte` in `state`, or kDeadState.
  int32_t step(int32_t state, unsigned char byte) {
    const int32_t next = states_[static_cast<size_t>(state)].next[byte];
    if (next != kUnknown) return next;
    const int32_t computed = compute_step(state, byte);  // may grow states_: index again after
    states_[static_cast<size_t>(state)].next[byte] = computed;
    return computed;
  }
  bool accepting(int32_t state) const { return states_[static_cast<size_t>(state)].accepting; }
  // Whether the grammar has token edges at all (byte-only grammars skip every token path on this).
  bool grammar_has_token_edges() const { return has_token_edges_; }
  // Whether some stack top of `state` has a token edge (never, in byte-only grammars).
  bool has_token_edges(int32_t state) const {
    return has_token_edges_ && states_[static_cast<size_t>(state)].token_edges;
  }
  // The state after reading token `token` whole through the token edges of `state` (byte edges
  // play no part), or kDeadState. `not_text`: the token is special or an end id, which negated
  // edges never take. Cached per state.
  int32_t step_token(int32_t state, int32_t token, bool not_text);
  // The same for a text token that no token edge of `state` names (what every negated edge takes).
  int32_t step_other_token(int32_t state);
  // The ids the token edges of `state` name (sorted, unique), and whether one is negated.
  void token_edge_ids(int32_t state, std::vector<int32_t>& ids, bool& any_negated) const;
  // The state whose configurations are those of `a` and of `b` (either may be kDeadState): where a
  // token can be read both as bytes and through a token edge.
  int32_t merge(int32_t a, int32_t b);
  // A state that accepts and cannot read any further byte.
  bool finished(int32_t state) const {
    const auto& s = states_[static_cast<size_t>(state)];
    return s.accepting && s.frames.empty();
  }
  // Per-state memos for the token matcher (what it proved about a state's string characters),
  // kNotComputed until it stores one: states are immutable, so a proof holds for good. The
  // references are invalidated by step() (which may add states).
  static constexpr uint32_t kNotComputed = UINT32_MAX - 1;
  uint32_t& string_chars_memo(int32_t state) { return states_[static_cast<size_t>(state)].string_chars; }
  int8_t& string_closed_memo(int32_t state) { return states_[static_cast<size_t>(state)].string_closed; }
  // The bytes some stack top of `state` has an edge for: a superset of those step() takes.
  std::bitset<256> edge_bytes(int32_t state) const;
  size_t state_count() const { return states_.size(); }
  const Grammar& grammar() const { return *grammar_; }

 private:
  static constexpr int32_t kUnknown = -2;
  static constexpr uint32_t kNoFrame = UINT32_MAX;

  struct Frame {
    uint32_t node;
    uint32_t parent;
    uint32_t depth;
    // The frames one closure step away (empty edges, calls): adjacent_[adj_begin, +adj_count),
    // found once by expand() so that later closures through this frame make no hash lookups.
    uint32_t adj_begin;
    uint32_t adj_count;
    uint64_t slots;  // marks of this rule invocation (grammar.h); 0 for grammars without slots
  };
  static constexpr uint32_t kNotExpanded = UINT32_MAX, kGuarded = UINT32_MAX - 1;
  struct State {
    std::vector<uint32_t> frames;  // sorted frame ids whose node has byte or token edges
    bool accepting = false;
    int8_t string_closed = -1;
    bool token_edges = false;  // some frame's node has token edges (fits the padding: no bigger)
    uint32_t string_chars = kNotComputed;
    int32_t next[256];
  };

  uint32_t frame(uint32_t node, uint32_t parent, uint64_t slots);
  void expand(uint32_t f);
  // Follows empty edges, calls and returns from `seeds`; interns the resulting state.
  int32_t close(std::vector<uint32_t>& seeds);
  // The state of these (sorted) stack tops: found, or added.
  int32_t intern(const std::vector<uint32_t>& tops, bool accepting);
  // Token steps: `other` is a text token no edge names (then `token` is ignored).
  int32_t compute_token_step(int32_t state, int32_t token, bool not_text, bool other);
  int32_t compute_step(int32_t state, unsigned char byte);

  std::shared_ptr<const Grammar> grammar_;
  bool has_token_edges_ = false;
  // The states with token edges (kept aside, so byte-only states stay as small as before): the
  // results of their token steps.
  struct TokenCache {
    int32_t other = kUnknown;                       // step_other_token
    std::vector<std::pair<int32_t, int32_t>> next;  // step_token: (token, state)
  };
  std::unordered_map<int32_t, TokenCache> token_caches_;
  std::vector<Frame> frames_;
  std::unordered_map<uint64_t, uint32_t> frame_ids_;  // frames without slot marks, by (node, parent)
  struct SlotFrameKey {
    uint64_t node_parent, slots;
    bool operator==(const SlotFrameKey&) const = default;
  };
  struct SlotFrameHash {
    size_t operator()(const SlotFrameKey& k) const { return k.node_parent * 0x9E3779B97F4A7C15ull ^ (k.slots * 0xC2B2AE3D27D4EB4Full); }
  };
  std::unordered_map<SlotFrameKey, uint32_t, SlotFrameHash> slot_frame_ids_;  // the others
  std::vector<uint32_t> frame_mark_;  // closure's visited stamps, one per frame
  std::vector<uint32_t> adjacent_;    // Frame::adj_begin indexes it
  uint32_t stamp_ = 0;
  std::vector<State> states_;
  struct VectorHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };
  std::unordered_map<std::vector<uint32_t>, int32_t, VectorHash> state_ids_[2];  // by accepting
  int32_t initial_ = kDeadState;
  std::vector<uint32_t> work_, tops_, seeds_;
};

}  // namespace lemma::grammar
