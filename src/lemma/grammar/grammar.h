// A compiled grammar: every rule is a small graph of nodes joined by byte-range edges, empty
// (epsilon) edges and call edges (enter another rule, continue at the edge's target when it ends).
// This is a recursive transition network: a recognizer over it keeps a set of call stacks. Each
// rule invocation also carries up to 64 slot marks (expr.h): a call edge with a slot is taken once
// per invocation, and a node with required slots is only alive once they are all marked.
// Token edges (from token references, expr.h) consume one whole token instead of a byte; byte-only
// grammars have none and are read exactly as before.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lemma/grammar/expr.h"

namespace lemma::grammar {

struct ByteEdge {
  unsigned char lo, hi;
  uint32_t target;
};

struct CallEdge {
  uint32_t rule;
  uint32_t target;
  int32_t slot = -1;  // >= 0: refused when marked in the caller's invocation, marks it otherwise
};

// A grammar's token reference: an id, or a text naming the token until resolve_tokens() gives it
// its id in the vocabulary the grammar is matched against.
struct TokenRef {
  int32_t id = -1;   // -1: not resolved yet (such an edge matches nothing)
  std::string name;  // "" for references by id
};

// Consumes one token: token_refs()[ref]'s id, or (negated) any one text token but that one. Text
// tokens are those that are neither special nor end-of-generation ids, so a special
// token is only ever read where a reference names it.
struct TokenEdge {
  uint32_t ref;
  bool negated;
  uint32_t target;
};

struct Node {
  std::vector<ByteEdge> byte_edges;
  std::vector<uint32_t> empty_edges;
  std::vector<CallEdge> calls;
  bool is_rule_end = false;  // reaching it returns from the node's rule
  bool has_token_edges = false;  // Grammar::token_edges(node) is not empty (kept aside: rare)
  uint64_t required_slots = 0;  // the node is dead unless its invocation has marked all of these
  uint64_t forbidden_slots = 0;  // ... and dead when it has marked any of these
};

struct Rule {
  std::string name;
  uint32_t start = 0;
  uint32_t end = 0;
};

class Grammar {
 public:
  const Node& node(uint32_t id) const { return nodes_[id]; }
  const Rule& rule(uint32_t id) const { return rules_[id]; }
  uint32_t root() const { return root_; }
  size_t node_count() const { return nodes_.size(); }
  size_t rule_count() const { return rules_.size(); }
  const std::vector<TokenRef>& token_refs() const { return token_refs_; }
  bool has_token_edges() const { return !token_refs_.empty(); }
  const std::vector<TokenEdge>& token_edges(uint32_t node) const {
    static const std::vector<TokenEdge> kNone;
    return node < token_edges_.size() ? token_edges_[node] : kNone;
  }
  // Gives every reference by name the id `id_of` returns for its text (id_of throws for unknown
  // names). References by id keep theirs.
  void resolve_token_names(const std::function<int32_t(const std::string&)>& id_of);

 private:
  friend class GrammarBuilder;
  friend class ComposedGrammarBuilder;  // embeds whole grammars as rules (composed_grammar.h)
  std::vector<Node> nodes_;
  std::vector<TokenRef> token_refs_;
  std::vector<std::vector<TokenEdge>> token_edges_;  // by node; empty without token references
  std::vector<Rule> rules_;
  uint32_t root_ = 0;
};

// Declare rules (so expressions can call rules defined later: recursion), define each once,
// then build() with the root rule.
class GrammarBuilder {
 public:
  int declare(std::string name);
  void define(int rule, ExprPtr body);
  bool is_defined(int rule) const { return bodies_[static_cast<size_t>(rule)] != nullptr; }
  // Throws InvalidArgument naming a rule that was declared but never defined.
  Grammar build(int root) const;

 private:
  std::vector<std::string> names_;
  std::vector<ExprPtr> bodies_;
};

}  // namespace lemma::grammar
