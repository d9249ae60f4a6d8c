#include "lemma/grammar/byte_dfa.h"

#include <algorithm>
#include <map>

#include "lemma/base/error.h"
#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

namespace {

// The expression's Thompson graph (grammar.h's compiler) is the NFA: byte edges and empty edges.
class Nfa {
 public:
  explicit Nfa(const ExprPtr& e) {
    GrammarBuilder b;
    const int root = b.declare("dfa");
    b.define(root, e);
    g_ = b.build(root);
    for (size_t i = 0; i < g_.node_count(); ++i) {
      const Node& n = g_.node(static_cast<uint32_t>(i));
      if (!n.calls.empty() || n.has_token_edges || n.required_slots != 0 || n.forbidden_slots != 0) {
        fail<Unsupported>("an automaton over an expression with rule calls, tokens or slots");
      }
    }
  }

  std::vector<uint32_t> closure(std::vector<uint32_t> set) const {
    std::vector<bool> seen(g_.node_count());
    std::vector<uint32_t> todo = set;
    for (uint32_t s : set) seen[s] = true;
    while (!todo.empty()) {
      const uint32_t s = todo.back();
      todo.pop_back();
      for (uint32_t t : g_.node(s).empty_edges) {
        if (!seen[t]) {
          seen[t] = true;
          set.push_back(t);
          todo.push_back(t);
        }
      }
    }
    std::sort(set.begin(), set.end());
    return set;
  }
  uint32_t start() const { return g_.rule(0).start; }
  bool accepting(const std::vector<uint32_t>& set) const {
    return std::binary_search(set.begin(), set.end(), g_.rule(0).end);
  }
  const Node& node(uint32_t id) const { return g_.node(id); }

 private:
  Grammar g_;
};

}  // namespace

ByteDfa ByteDfa::from_expr(const ExprPtr& e, size_t max_states) {
  const Nfa nfa(e);
  ByteDfa dfa;
  std::map<std::vector<uint32_t>, int32_t> index;
  std::vector<std::vector<uint32_t>> sets;
  auto intern = [&](std::vector<uint32_t> set) -> int32_t {
    auto [it, inserted] = index.emplace(std::move(set), static_cast<int32_t>(sets.size()));
    if (inserted) {
      if (sets.size() >= max_states) fail<Unsupported>("a regular language needing more than {} automaton states", max_states);
      sets.push_back(it->first);
      dfa.next_.emplace_back();
      dfa.accepting_.push_back(nfa.accepting(it->first));
    }
    return it->second;
  };
  intern(nfa.closure({nfa.start()}));
  for (size_t s = 0; s < sets.size(); ++s) {
    std::array<std::vector<uint32_t>, 256> targets;
    for (uint32_t n : sets[s]) {
      for (const ByteEdge& edge : nfa.node(n).byte_edges) {
        for (int b = edge.lo; b <= edge.hi; ++b) targets[static_cast<size_t>(b)].push_back(edge.target);
      }
    }
    std::array<int32_t, 256> row;
    for (int b = 0; b < 256; ++b) {
      auto& t = targets[static_cast<size_t>(b)];
      if (t.empty()) {
        row[static_cast<size_t>(b)] = kDead;
        continue;
      }
      // Bytes of one range usually share their target set: reuse the previous byte's state.
      if (b > 0 && t == targets[static_cast<size_t>(b - 1)]) {
        row[static_cast<size_t>(b)] = row[static_cast<size_t>(b - 1)];
        continue;
      }
      row[static_cast<size_t>(b)] = intern(nfa.closure(t));
    }
    dfa.next_[s] = row;
  }
  return dfa;
}

bool ByteDfa::matches(std::string_view text) const {
  int32_t s = 0;
  for (char c : text) {
    s = next(s, static_cast<unsigned char>(c));
    if (s == kDead) return false;
  }
  return accepting(s);
}

DfaProduct dfa_product(const std::vector<const ByteDfa*>& parts, size_t max_states) {
  if (parts.empty() || parts.size() > 64) fail<Unsupported>("a product of {} automata", parts.size());
  DfaProduct p;
  std::map<std::vector<int32_t>, int32_t> index;
  std::vector<std::vector<int32_t>> tuples;
  auto intern = [&](std::vector<int32_t> tuple) -> int32_t {
    auto [it, inserted] = index.emplace(std::move(tuple), static_cast<int32_t>(tuples.size()));
    if (inserted) {
      if (tuples.size() >= max_states) fail<Unsupported>("keys needing more than {} automaton states", max_states);
      tuples.push_back(it->first);
      uint64_t sig = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        if (it->first[i] != ByteDfa::kDead && parts[i]->accepting(it->first[i])) sig |= uint64_t{1} << i;
      }
      p.next.emplace_back();
      p.signature.push_back(sig);
    }
    return it->second;
  };
  intern(std::vector<int32_t>(parts.size(), 0));
  std::vector<int32_t> t(parts.size()), previous;
  for (size_t s = 0; s < tuples.size(); ++s) {
    std::array<int32_t, 256> row;
    previous.clear();
    const std::vector<int32_t> from = tuples[s];  // intern() may grow `tuples`
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<unsigned char>(b);
      if (parts[0]->next(from[0], byte) == ByteDfa::kDead) {
        row[static_cast<size_t>(b)] = ByteDfa::kDead;
        previous.clear();
        continue;
      }
      for (size_t i = 0; i < parts.size(); ++i) {
        t[i] = from[i] == ByteDfa::kDead ? ByteDfa::kDead : parts[i]->next(from[i], byte);
      }
      // Neighbouring bytes mostly lead to the same tuple: skip the lookup then.
      row[static_cast<size_t>(b)] = t == previous ? row[static_cast<size_t>(b - 1)] : intern(t);
      previous = t;
    }
    p.next[s] = row;
  }
  return p;
}

ExprPtr product_expr(const DfaProduct& p, const std::function<bool(uint64_t)>& keep) {
  const size_t n = p.next.size();
  // States that can reach a kept one: a backwards search from the kept states.
  std::vector<std::vector<uint32_t>> preds(n);
  for (size_t s = 0; s < n; ++s) {
    for (int32_t t : p.next[s]) {
      if (t != ByteDfa::kDead) preds[static_cast<size_t>(t)].push_back(static_cast<uint32_t>(s));
    }
  }
  std::vector<bool> live(n);
  std::vector<uint32_t> todo;
  for (size_t s = 0; s < n; ++s) {
    if (keep(p.signature[s])) {
      live[s] = true;
      todo.push_back(static_cast<uint32_t>(s));
    }
  }
  while (!todo.empty()) {
    const uint32_t s = todo.back();
    todo.pop_back();
    for (uint32_t q : preds[s]) {
      if (!live[q]) {
        live[q] = true;
        todo.push_back(q);
      }
    }
  }
  if (!live[0]) return nothing();
  // Renumber the live states reachable from the start, start first.
  std::vector<int32_t> id(n, -1);
  std::vector<uint32_t> order = {0};
  id[0] = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    for (int32_t t : p.next[order[i]]) {
      if (t != ByteDfa::kDead && live[static_cast<size_t>(t)] && id[static_cast<size_t>(t)] < 0) {
        id[static_cast<size_t>(t)] = static_cast<int32_t>(order.size());
        order.push_back(static_cast<uint32_t>(t));
      }
    }
  }
  auto a = std::make_shared<ByteAutomaton>();
  a->edges.resize(order.size());
  a->accepting.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& row = p.next[order[i]];
    a->accepting[i] = keep(p.signature[order[i]]);
    int b = 0;
    while (b < 256) {
      const int32_t t = row[static_cast<size_t>(b)];
      int hi = b;
      while (hi + 1 < 256 && row[static_cast<size_t>(hi + 1)] == t) ++hi;
      if (t != ByteDfa::kDead && live[static_cast<size_t>(t)]) {
        a->edges[i].push_back({static_cast<unsigned char>(b), static_cast<unsigned char>(hi),
                               static_cast<uint32_t>(id[static_cast<size_t>(t)])});
      }
      b = hi + 1;
    }
  }
  return automaton(std::move(a));
}

ExprPtr length_bounded_expr(const ByteDfa& text, const ByteDfa& chars, int min, int max, size_t max_states) {
  // States (text state, chars state, characters so far); without an upper bound the count stops at
  // `min`, past which more characters change nothing.
  const int cap = max == kUnbounded ? min : max;
  DfaProduct p;
  std::map<std::array<int32_t, 3>, int32_t> index;
  std::vector<std::array<int32_t, 3>> tuples;
  auto intern = [&](const std::array<int32_t, 3>& t) -> int32_t {
    auto [it, inserted] = index.emplace(t, static_cast<int32_t>(tuples.size()));
    if (inserted) {
      if (tuples.size() >= max_states) fail<Unsupported>("a pattern with a length bound needing more than {} automaton states", max_states);
      tuples.push_back(t);
      p.next.emplace_back();
      p.signature.push_back(text.accepting(t[0]) && chars.accepting(t[1]) && t[2] >= min ? 1 : 0);
    }
    return it->second;
  };
  intern({0, 0, 0});
  for (size_t s = 0; s < tuples.size(); ++s) {
    const auto from = tuples[s];
    std::array<int32_t, 256> row;
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<unsigned char>(b);
      const int32_t t = text.next(from[0], byte), c = chars.next(from[1], byte);
      int32_t n = from[2];
      if (t != ByteDfa::kDead && c != ByteDfa::kDead && chars.accepting(c)) ++n;
      if (t == ByteDfa::kDead || c == ByteDfa::kDead || (max != kUnbounded && n > max)) {
        row[static_cast<size_t>(b)] = ByteDfa::kDead;
        continue;
      }
      row[static_cast<size_t>(b)] = intern({t, c, std::min(n, cap)});
    }
    p.next[s] = row;
  }
  return product_expr(p, [](uint64_t sig) { return sig == 1; });
}

}  // namespace lemma::grammar
