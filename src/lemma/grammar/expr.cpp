#include "lemma/grammar/expr.h"

namespace lemma::grammar {

namespace {
std::shared_ptr<Expr> make(Expr::Kind kind) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  return e;
}
}  // namespace

ExprPtr empty() { return make(Expr::Kind::kSeq); }

// An alternation without branches: the empty language.
ExprPtr nothing() { return make(Expr::Kind::kAlt); }

ExprPtr token_ref(int32_t id, bool negated) {
  auto e = make(Expr::Kind::kToken);
  e->token = id;
  e->negated = negated;
  return e;
}

ExprPtr token_named(std::string text, bool negated) {
  auto e = make(Expr::Kind::kToken);
  e->token_name = std::move(text);
  e->negated = negated;
  return e;
}

ExprPtr automaton(std::shared_ptr<const ByteAutomaton> a) {
  if (a->edges.empty()) return nothing();
  auto e = make(Expr::Kind::kAutomaton);
  e->automaton = std::move(a);
  return e;
}

bool is_nothing(const ExprPtr& e) { return e->kind == Expr::Kind::kAlt && e->items.empty(); }

ExprPtr bytes(const std::bitset<256>& set) {
  if (set.none()) return nothing();
  auto e = make(Expr::Kind::kBytes);
  e->bytes = set;
  return e;
}

ExprPtr byte_range(unsigned char lo, unsigned char hi) {
  std::bitset<256> set;
  for (int b = lo; b <= hi; ++b) set.set(static_cast<size_t>(b));
  return bytes(set);
}

ExprPtr literal(std::string_view text) {
  std::vector<ExprPtr> items;
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    items.push_back(byte_range(b, b));
  }
  return seq(std::move(items));
}

ExprPtr seq(std::vector<ExprPtr> items) {
  auto e = make(Expr::Kind::kSeq);
  for (auto& item : items) {
    if (is_nothing(item)) return nothing();
    if (item->kind == Expr::Kind::kSeq) {
      e->items.insert(e->items.end(), item->items.begin(), item->items.end());
    } else {
      e->items.push_back(std::move(item));
    }
  }
  if (e->items.size() == 1) return e->items[0];
  return e;
}

ExprPtr alt(std::vector<ExprPtr> items) {
  auto e = make(Expr::Kind::kAlt);
  for (auto& item : items) {
    if (!is_nothing(item)) e->items.push_back(std::move(item));
  }
  if (e->items.size() == 1) return e->items[0];
  return e;
}

ExprPtr repeat(ExprPtr item, int min, int max) {
  if (max != kUnbounded && max < min) return nothing();
  if (max == 0) return empty();
  if (is_nothing(item)) return min == 0 ? empty() : nothing();
  if (min == 1 && max == 1) return item;
  auto e = make(Expr::Kind::kRepeat);
  e->items.push_back(std::move(item));
  e->min = min;
  e->max = max;
  return e;
}

ExprPtr optional(ExprPtr item) { return repeat(std::move(item), 0, 1); }
ExprPtr star(ExprPtr item) { return repeat(std::move(item), 0, kUnbounded); }
ExprPtr plus(ExprPtr item) { return repeat(std::move(item), 1, kUnbounded); }

ExprPtr rule_ref(int rule) {
  auto e = make(Expr::Kind::kRule);
  e->rule = rule;
  return e;
}

ExprPtr rule_ref_once(int rule, int slot) {
  auto e = make(Expr::Kind::kRule);
  e->rule = rule;
  e->slot = slot;
  return e;
}

ExprPtr slot_guard(uint64_t required, uint64_t forbidden) {
  if (required & forbidden) return nothing();
  if (required == 0 && forbidden == 0) return empty();
  auto e = make(Expr::Kind::kRequire);
  e->slots = required;
  e->forbidden = forbidden;
  return e;
}

ExprPtr require_slots(uint64_t slots) {
  if (slots == 0) return empty();
  auto e = make(Expr::Kind::kRequire);
  e->slots = slots;
  return e;
}

}  // namespace lemma::grammar
