#include "lemma/grammar/composed_grammar.h"

namespace lemma::grammar {

int ComposedGrammarBuilder::embed(Grammar grammar) {
  const int rule = builder_.declare("embedded:" + grammar.rule(grammar.root()).name);
  builder_.define(rule, nothing());  // a placeholder: build() points the rule at the grammar's root
  embedded_.emplace_back(rule, std::move(grammar));
  return rule;
}

Grammar ComposedGrammarBuilder::build(int root) {
  Grammar g = builder_.build(root);
  for (auto& [placeholder, e] : embedded_) {
    // Append e's nodes, rules and token references, every id shifted past g's.
    const auto node_base = static_cast<uint32_t>(g.nodes_.size());
    const auto rule_base = static_cast<uint32_t>(g.rules_.size());
    const auto ref_base = static_cast<uint32_t>(g.token_refs_.size());
    for (Node n : e.nodes_) {
      for (ByteEdge& b : n.byte_edges) b.target += node_base;
      for (uint32_t& t : n.empty_edges) t += node_base;
      for (CallEdge& c : n.calls) {
        c.rule += rule_base;
        c.target += node_base;
      }
      g.nodes_.push_back(std::move(n));
    }
    if (!e.token_edges_.empty()) {
      g.token_edges_.resize(node_base + e.token_edges_.size());
      for (size_t i = 0; i < e.token_edges_.size(); ++i) {
        for (TokenEdge t : e.token_edges_[i]) {
          t.ref += ref_base;
          t.target += node_base;
          g.token_edges_[node_base + i].push_back(t);
        }
      }
    }
    for (const TokenRef& r : e.token_refs_) g.token_refs_.push_back(r);
    for (Rule r : e.rules_) {
      r.start += node_base;
      r.end += node_base;
      g.rules_.push_back(std::move(r));
    }
    Rule& p = g.rules_[static_cast<size_t>(placeholder)];
    p.start = g.rules_[rule_base + e.root_].start;
    p.end = g.rules_[rule_base + e.root_].end;
  }
  embedded_.clear();
  return g;
}

}  // namespace lemma::grammar
