// Grammar expressions: what the front ends (JSON Schema, regex, literals) build before the
// expressions are compiled into the byte-level graph a recognizer walks. Terminals are sets of
// bytes; everything else is sequence, alternation, bounded or unbounded repetition and calls of
// named rules (which is what makes the language context-free: recursion goes through rules).
// Slots (at most 64 per rule invocation) let a rule say "each of these calls at most once, and
// these ones at least once" without spelling every order: what JSON objects whose properties may
// come in any order need (an exact grammar for that would be exponential in the property count).
// Token references (kToken) consume one whole token of the vocabulary the grammar is matched
// against, named by id or by its text (resolved when the constraint is built): what special tokens
// such as `<|im_end|>` or `[TOOL_CALLS]`, which no byte string produces, need.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lemma::grammar {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

// A finite automaton over bytes spelled out state by state (state 0 starts): what a regular
// language computed by automaton operations (byte_dfa.h: complements, products) becomes in a grammar.
struct ByteAutomaton {
  struct Edge {
    unsigned char lo, hi;
    uint32_t target;
  };
  std::vector<std::vector<Edge>> edges;  // by state
  std::vector<bool> accepting;           // by state
};

inline constexpr int kUnbounded = -1;

struct Expr {
  enum class Kind { kBytes, kSeq, kAlt, kRepeat, kRule, kRequire, kToken, kAutomaton };
  Kind kind = Kind::kSeq;
  std::bitset<256> bytes;      // kBytes
  std::vector<ExprPtr> items;  // kSeq, kAlt; kRepeat: one item
  int min = 0;                 // kRepeat
  int max = kUnbounded;        // kRepeat
  int rule = -1;               // kRule
  int slot = -1;               // kRule: the call marks this slot of the caller's invocation, and is
                               // refused when the slot is already marked (-1: no slot)
  uint64_t slots = 0;          // kRequire: matches "" when all these slots are marked, else nothing
  uint64_t forbidden = 0;      // kRequire: ... and none of these is marked
  int32_t token = -1;          // kToken: the token id, or -1 when named by `token_name`
  std::string token_name;      // kToken: the token's text (e.g. "<|im_end|>"), resolved later
  bool negated = false;        // kToken: any one text token except this one
  std::shared_ptr<const ByteAutomaton> automaton;  // kAutomaton
};

inline constexpr int kMaxSlots = 64;

ExprPtr empty();                                  // matches ""
ExprPtr nothing();                                // matches no string at all
ExprPtr bytes(const std::bitset<256>& set);       // one byte from the set
ExprPtr byte_range(unsigned char lo, unsigned char hi);
ExprPtr literal(std::string_view text);           // exactly these bytes
ExprPtr seq(std::vector<ExprPtr> items);
ExprPtr alt(std::vector<ExprPtr> items);
ExprPtr repeat(ExprPtr item, int min, int max);   // max = kUnbounded for no limit
ExprPtr optional(ExprPtr item);
ExprPtr star(ExprPtr item);
ExprPtr plus(ExprPtr item);
ExprPtr rule_ref(int rule);
// A call of `rule` taken at most once per invocation of the rule this expression is part of.
ExprPtr rule_ref_once(int rule, int slot);
// "" when every slot in `slots` was marked in this invocation (by rule_ref_once), else no match.
ExprPtr require_slots(uint64_t slots);
// "" when every slot in `required` and none in `forbidden` was marked in this invocation.
ExprPtr slot_guard(uint64_t required, uint64_t forbidden);

// Exactly one token: token `id`, or (negated) any one text token but `id` (grammar.h: TokenEdge).
ExprPtr token_ref(int32_t id, bool negated = false);
// The same with the token named by its text, resolved against the vocabulary when the constraint
// is built (token_constraint.h: resolve_tokens).
ExprPtr token_named(std::string text, bool negated = false);

// The strings `a` leads from state 0 to an accepting state.
ExprPtr automaton(std::shared_ptr<const ByteAutomaton> a);

bool is_nothing(const ExprPtr& e);

}  // namespace lemma::grammar
