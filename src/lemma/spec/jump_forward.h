// Jump-forward decoding for constrained requests (G12): where a request's grammar allows exactly one
// continuation (the keys and punctuation of a JSON schema, a choice's rest once it is unambiguous),
// those bytes are proposed as drafts — cut into the vocabulary's tokens by longest match — and the
// target verifies them like any draft. So the forced text costs one forward for many tokens, and the
// output stays what plain constrained decoding samples: a token the model would have split otherwise
// is simply not confirmed (unlike rewriting the output, which changes the tokenisation the model sees).
// A token the grammar forces (the only one its mask allows where the grammar has token references,
// e.g. Mistral's special [TOOL_CALLS] before a forced call) is proposed too, and forced text and
// tokens chain (`[TOOL_CALLS]`, `get_time`, `[ARGS]`, `{"zone": "` in one draft).
// Requests with nothing forced, and unconstrained ones, go to the inner source (or get no drafts).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <unordered_map>

#include "lemma/grammar/token_constraint.h"
#include "lemma/sched/draft_source.h"

namespace lemma::spec {

// A vocabulary's non-special tokens by their bytes, for cutting forced text into tokens.
class TokenSpellings {
 public:
  explicit TokenSpellings(const grammar::TokenVocabulary& vocabulary);
  // The tokens whose bytes spell a prefix of `text`, the longest at each point (lowest id among
  // equal spellings), at most `max_tokens`; stops where no token matches.
  std::vector<int32_t> longest_match(const std::string& text, size_t max_tokens) const;

 private:
  std::unordered_map<std::string, int32_t> ids_;
  size_t max_length_ = 0;
};

class JumpForwardSource final : public DraftSource {
 public:
  // `inner` (may be null) answers the other requests with at most `inner_max_drafts` drafts each.
  JumpForwardSource(std::unique_ptr<DraftSource> inner, int inner_max_drafts);

  void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) override;
  void forget(uint64_t id) override;

 private:
  struct Tracked {
    std::unique_ptr<grammar::ConstraintState> state;
    size_t consumed = 0;  // output tokens fed to `state`
  };
  // The forced tokens of request `q` (empty when none or the state cannot follow its outputs).
  std::vector<int32_t> forced_tokens(const DraftQuery& q);
  // The one token `state` allows, where its grammar has token references and the mask holds a
  // single token (a special token no byte string spells, so forced_bytes cannot show it).
  static std::optional<int32_t> forced_token(grammar::ConstraintState& state, const grammar::TokenConstraint& constraint);

  std::unique_ptr<DraftSource> inner_;
  int inner_max_drafts_;
  std::unordered_map<uint64_t, Tracked> tracked_;
  // Per vocabulary seen (one per tokenizer); the shared pointer keeps its address from being reused.
  struct Spelled {
    std::shared_ptr<const grammar::VocabularyIndex> vocabulary;
    TokenSpellings spellings;
  };
  std::unordered_map<const grammar::VocabularyIndex*, std::unique_ptr<Spelled>> spellings_;
  std::vector<DraftQuery> inner_queries_;
  std::vector<size_t> inner_index_;
  std::vector<Drafts> inner_out_;
};

}  // namespace lemma::spec
