// A compiled grammar: every rule is a small graph of nodes joined by byte-range edges, empty
// (epsilon) edges and call edges (enter another rule, continue at the edge's target when it ends).
// This is a recursive transition network: a recognizer over it keeps a set of call stacks. Each
// rule invocation also carries up to 64 slot marks (expr.h): a call edge with a slot is taken once
// per invocation, and a node with required slots is only alive once they are all marked.
#pragma once

#include <cstdint>
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

struct Node {
  std::vector<ByteEdge> byte_edges;
  std::vector<uint32_t> empty_edges;
  std::vector<CallEdge> calls;
  bool is_rule_end = false;  // reaching it returns from the node's rule
  uint64_t required_slots = 0;  // the node is dead unless its invocation has marked all of these
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

 private:
  friend class GrammarBuilder;
  std::vector<Node> nodes_;
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
