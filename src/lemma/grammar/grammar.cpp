#include "lemma/grammar/grammar.h"

#include "lemma/base/error.h"

namespace lemma::grammar {

int GrammarBuilder::declare(std::string name) {
  names_.push_back(std::move(name));
  bodies_.push_back(nullptr);
  return static_cast<int>(names_.size() - 1);
}

void GrammarBuilder::define(int rule, ExprPtr body) { bodies_[static_cast<size_t>(rule)] = std::move(body); }

namespace {

// Thompson-style construction. Every branch and loop gets fresh nodes entered by empty edges, so a
// loop's back edge can never leak into a sibling alternative that shares the entry node.
class Compiler {
 public:
  Compiler(std::vector<Node>& nodes, std::vector<TokenRef>& token_refs, std::vector<std::vector<TokenEdge>>& token_edges)
      : nodes_(nodes), token_refs_(token_refs), token_edges_(token_edges) {}

  uint32_t fresh() {
    nodes_.emplace_back();
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  void link(uint32_t from, uint32_t to) { nodes_[from].empty_edges.push_back(to); }

  // Emits `e` starting at `from`; returns the node where it ends.
  uint32_t emit(const Expr& e, uint32_t from) {
    switch (e.kind) {
      case Expr::Kind::kBytes: {
        const uint32_t to = fresh();
        int b = 0;
        while (b < 256) {
          if (!e.bytes.test(static_cast<size_t>(b))) {
            ++b;
            continue;
          }
          int hi = b;
          while (hi + 1 < 256 && e.bytes.test(static_cast<size_t>(hi + 1))) ++hi;
          nodes_[from].byte_edges.push_back(
              {static_cast<unsigned char>(b), static_cast<unsigned char>(hi), to});
          b = hi + 1;
        }
        return to;
      }
      case Expr::Kind::kSeq: {
        uint32_t at = from;
        for (const auto& item : e.items) at = emit(*item, at);
        return at;
      }
      case Expr::Kind::kAlt: {
        const uint32_t to = fresh();  // no branch links here when the alternation is empty
        for (const auto& item : e.items) {
          const uint32_t start = fresh();
          link(from, start);
          link(emit(*item, start), to);
        }
        return to;
      }
      case Expr::Kind::kRepeat: {
        const Expr& item = *e.items[0];
        uint32_t at = from;
        for (int i = 0; i < e.min; ++i) at = emit(item, at);
        if (e.max == kUnbounded) {
          const uint32_t loop = fresh();
          link(at, loop);
          link(emit(item, loop), loop);
          const uint32_t out = fresh();
          link(loop, out);
          return out;
        }
        // Optional copies nested as (x(x(x)?)?)?: after k items exactly one path is alive.
        const uint32_t out = fresh();
        for (int i = e.min; i < e.max; ++i) {
          link(at, out);
          const uint32_t start = fresh();
          link(at, start);
          at = emit(item, start);
        }
        link(at, out);
        return out;
      }
      case Expr::Kind::kRule: {
        const uint32_t to = fresh();
        nodes_[from].calls.push_back({static_cast<uint32_t>(e.rule), to, e.slot});
        return to;
      }
      case Expr::Kind::kToken: {
        const uint32_t to = fresh();
        const auto ref = static_cast<uint32_t>(token_refs_.size());
        token_refs_.push_back({e.token_name.empty() ? e.token : -1, e.token_name});
        if (token_edges_.size() <= from) token_edges_.resize(from + 1);
        token_edges_[from].push_back({ref, e.negated, to});
        nodes_[from].has_token_edges = true;
        return to;
      }
      case Expr::Kind::kRequire: {
        const uint32_t to = fresh();
        nodes_[to].required_slots = e.slots;
        nodes_[to].forbidden_slots = e.forbidden;
        link(from, to);
        return to;
      }
      case Expr::Kind::kAutomaton: {
        // One node per state, entered by an empty edge (the start state may be re-entered by
        // its own loops, which must not leak into `from`'s other edges).
        const ByteAutomaton& a = *e.automaton;
        const auto base = static_cast<uint32_t>(nodes_.size());
        for (size_t i = 0; i < a.edges.size(); ++i) fresh();
        const uint32_t to = fresh();
        link(from, base);
        for (size_t s = 0; s < a.edges.size(); ++s) {
          for (const auto& edge : a.edges[s]) nodes_[base + s].byte_edges.push_back({edge.lo, edge.hi, base + edge.target});
          if (a.accepting[s]) link(base + static_cast<uint32_t>(s), to);
        }
        return to;
      }
    }
    return from;
  }

 private:
  std::vector<Node>& nodes_;
  std::vector<TokenRef>& token_refs_;
  std::vector<std::vector<TokenEdge>>& token_edges_;
};

}  // namespace

void Grammar::resolve_token_names(const std::function<int32_t(const std::string&)>& id_of) {
  for (TokenRef& r : token_refs_) {
    if (!r.name.empty()) r.id = id_of(r.name);
  }
}

Grammar GrammarBuilder::build(int root) const {
  Grammar g;
  Compiler c(g.nodes_, g.token_refs_, g.token_edges_);
  g.rules_.resize(names_.size());
  for (size_t r = 0; r < names_.size(); ++r) {
    if (!bodies_[r]) fail<InvalidArgument>("grammar: rule '{}' is used but never defined", names_[r]);
    g.rules_[r].name = names_[r];
    g.rules_[r].start = c.fresh();
  }
  for (size_t r = 0; r < names_.size(); ++r) {
    const uint32_t end = c.emit(*bodies_[r], g.rules_[r].start);
    g.rules_[r].end = end;
    g.nodes_[end].is_rule_end = true;
  }
  g.root_ = static_cast<uint32_t>(root);
  return g;
}

}  // namespace lemma::grammar
