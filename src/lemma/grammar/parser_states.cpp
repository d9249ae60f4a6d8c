#include "lemma/grammar/parser_states.h"

#include <algorithm>
#include <iterator>

#include "lemma/base/error.h"

namespace lemma::grammar {

namespace {
// Deep enough for any sane nesting; reached only by left recursion, which a stack-set recognizer
// cannot run (the front ends never produce it).
constexpr uint32_t kMaxDepth = 4096;
}  // namespace

size_t ParserStates::VectorHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

ParserStates::ParserStates(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), has_token_edges_(grammar_->has_token_edges()) {
  std::vector<uint32_t> seeds{frame(grammar_->rule(grammar_->root()).start, kNoFrame, 0)};
  initial_ = close(seeds);
}

uint32_t ParserStates::frame(uint32_t node, uint32_t parent, uint64_t slots) {
  const uint64_t key = (static_cast<uint64_t>(node) << 32) | parent;
  const auto id = static_cast<uint32_t>(frames_.size());
  // Most frames carry no marks: they keep the cheaper single-word key.
  uint32_t found;
  bool inserted;
  if (slots == 0) {
    const auto r = frame_ids_.try_emplace(key, id);
    found = r.first->second;
    inserted = r.second;
  } else {
    const auto r = slot_frame_ids_.try_emplace(SlotFrameKey{key, slots}, id);
    found = r.first->second;
    inserted = r.second;
  }
  if (inserted) {
    const uint32_t depth = parent == kNoFrame ? 0 : frames_[parent].depth + 1;
    if (depth > kMaxDepth) fail<InvalidArgument>("grammar: call stack deeper than {} (left recursion?)", kMaxDepth);
    frames_.push_back({node, parent, depth, 0, kNotExpanded, slots});
    frame_mark_.push_back(0);
  }
  return found;
}

void ParserStates::expand(uint32_t f) {
  const Frame fr = frames_[f];  // frame() below may move frames_
  const Node& n = grammar_->node(fr.node);
  if ((n.required_slots & ~fr.slots) != 0 || (n.forbidden_slots & fr.slots) != 0) {  // a guard that fails: dead
    frames_[f].adj_count = kGuarded;
    return;
  }
  const auto begin = static_cast<uint32_t>(adjacent_.size());
  for (uint32_t to : n.empty_edges) {
    const uint32_t next = frame(to, fr.parent, fr.slots);
    adjacent_.push_back(next);
  }
  for (const CallEdge& c : n.calls) {
    uint64_t marks = fr.slots;
    if (c.slot >= 0) {
      const uint64_t bit = uint64_t{1} << c.slot;
      if (marks & bit) continue;  // taken once in this invocation already
      marks |= bit;               // set on the return frame: it is resumed only after the call
    }
    const uint32_t ret = frame(c.target, fr.parent, marks);
    const uint32_t callee = frame(grammar_->rule(c.rule).start, ret, 0);
    adjacent_.push_back(callee);
  }
  frames_[f].adj_begin = begin;
  frames_[f].adj_count = static_cast<uint32_t>(adjacent_.size()) - begin;
}

int32_t ParserStates::close(std::vector<uint32_t>& seeds) {
  ++stamp_;
  work_.clear();
  tops_.clear();
  bool accepting = false;
  for (uint32_t f : seeds) {
    if (frame_mark_[f] != stamp_) {
      frame_mark_[f] = stamp_;
      work_.push_back(f);
    }
  }
  auto visit = [&](uint32_t f) {
    if (frame_mark_[f] != stamp_) {
      frame_mark_[f] = stamp_;
      work_.push_back(f);
    }
  };
  while (!work_.empty()) {
    const uint32_t f = work_.back();
    work_.pop_back();
    if (frames_[f].adj_count == kNotExpanded) expand(f);
    const Frame& fr = frames_[f];
    const Node& n = grammar_->node(fr.node);
    if (fr.adj_count == kGuarded) continue;
    if (!n.byte_edges.empty() || n.has_token_edges) tops_.push_back(f);
    for (uint32_t k = 0; k < fr.adj_count; ++k) visit(adjacent_[fr.adj_begin + k]);
    if (n.is_rule_end) {
      if (fr.parent == kNoFrame) {
        accepting = true;
      } else {
        visit(fr.parent);
      }
    }
  }
  if (tops_.empty() && !accepting) return kDeadState;
  std::sort(tops_.begin(), tops_.end());
  return intern(tops_, accepting);
}

int32_t ParserStates::intern(const std::vector<uint32_t>& tops, bool accepting) {
  auto& ids = state_ids_[accepting ? 1 : 0];
  auto it = ids.find(tops);
  if (it != ids.end()) return it->second;
  const auto id = static_cast<int32_t>(states_.size());
  State s;
  s.frames = tops;
  s.accepting = accepting;
  if (has_token_edges_) {
    for (uint32_t f : tops) s.token_edges = s.token_edges || grammar_->node(frames_[f].node).has_token_edges;
  }
  std::fill(std::begin(s.next), std::end(s.next), kUnknown);
  states_.push_back(std::move(s));
  ids.emplace(tops, id);
  return id;
}

int32_t ParserStates::merge(int32_t a, int32_t b) {
  if (a == kDeadState || a == b) return b;
  if (b == kDeadState) return a;
  // Both are closed: the union of their tops, accepting when either is, is closed too.
  const State& sa = states_[static_cast<size_t>(a)];
  const State& sb = states_[static_cast<size_t>(b)];
  std::vector<uint32_t> tops;
  std::set_union(sa.frames.begin(), sa.frames.end(), sb.frames.begin(), sb.frames.end(), std::back_inserter(tops));
  return intern(tops, sa.accepting || sb.accepting);
}

int32_t ParserStates::compute_token_step(int32_t state, int32_t token, bool not_text, bool other) {
  seeds_.clear();
  for (uint32_t f : states_[static_cast<size_t>(state)].frames) {
    const Frame fr = frames_[f];
    for (const TokenEdge& e : grammar_->token_edges(fr.node)) {
      const int32_t id = grammar_->token_refs()[e.ref].id;
      if (id < 0) continue;  // an unresolved name matches nothing
      const bool match = e.negated ? !not_text && (other || token != id) : !other && token == id;
      if (match) seeds_.push_back(frame(e.target, fr.parent, fr.slots));
    }
  }
  if (seeds_.empty()) return kDeadState;
  std::vector<uint32_t> seeds = seeds_;
  return close(seeds);
}

int32_t ParserStates::step_token(int32_t state, int32_t token, bool not_text) {
  const State& s = states_[static_cast<size_t>(state)];
  if (!s.token_edges) return kDeadState;
  bool named = false;
  for (uint32_t f : s.frames) {
    for (const TokenEdge& e : grammar_->token_edges(frames_[f].node)) named = named || grammar_->token_refs()[e.ref].id == token;
  }
  if (!named) return not_text ? kDeadState : step_other_token(state);
  for (const auto& [t, next] : token_caches_[state].next) {
    if (t == token) return next;
  }
  const int32_t next = compute_token_step(state, token, not_text, false);
  token_caches_[state].next.emplace_back(token, next);
  return next;
}

int32_t ParserStates::step_other_token(int32_t state) {
  if (!states_[static_cast<size_t>(state)].token_edges) return kDeadState;
  if (token_caches_[state].other == kUnknown) {
    const int32_t next = compute_token_step(state, -1, false, true);
    token_caches_[state].other = next;
  }
  return token_caches_[state].other;
}

void ParserStates::token_edge_ids(int32_t state, std::vector<int32_t>& ids, bool& any_negated) const {
  ids.clear();
  any_negated = false;
  for (uint32_t f : states_[static_cast<size_t>(state)].frames) {
    for (const TokenEdge& e : grammar_->token_edges(frames_[f].node)) {
      const int32_t id = grammar_->token_refs()[e.ref].id;
      if (id < 0) continue;
      ids.push_back(id);
      any_negated = any_negated || e.negated;
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

std::bitset<256> ParserStates::edge_bytes(int32_t state) const {
  std::bitset<256> out;
  for (uint32_t f : states_[static_cast<size_t>(state)].frames) {
    for (const ByteEdge& e : grammar_->node(frames_[f].node).byte_edges) {
      for (unsigned b = e.lo; b <= e.hi; ++b) out.set(b);
    }
  }
  return out;
}

int32_t ParserStates::compute_step(int32_t state, unsigned char byte) {
  seeds_.clear();
  for (uint32_t f : states_[static_cast<size_t>(state)].frames) {
    const Frame fr = frames_[f];
    for (const ByteEdge& e : grammar_->node(fr.node).byte_edges) {
      if (e.lo <= byte && byte <= e.hi) seeds_.push_back(frame(e.target, fr.parent, fr.slots));
    }
  }
  if (seeds_.empty()) return kDeadState;
  std::vector<uint32_t> seeds = seeds_;
  return close(seeds);
}

}  // namespace lemma::grammar
