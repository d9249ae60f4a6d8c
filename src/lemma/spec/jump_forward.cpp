#include "lemma/spec/jump_forward.h"

#include <algorithm>

#include "lemma/base/trace.h"

namespace lemma::spec {

namespace {

// Bytes of forced text looked at per step: more than any draft length needs.
constexpr size_t kMaxForcedBytes = 256;

}  // namespace

JumpForwardSource::JumpForwardSource(std::unique_ptr<DraftSource> inner, int inner_max_drafts)
    : inner_(std::move(inner)), inner_max_drafts_(inner_max_drafts) {}

TokenSpellings::TokenSpellings(const grammar::TokenVocabulary& v) {
  for (int32_t id = v.size() - 1; id >= 0; --id) {  // downwards: the lowest id of equal spellings wins
    const auto i = static_cast<size_t>(id);
    if (v.special[i] || v.bytes[i].empty()) continue;
    ids_[v.bytes[i]] = id;
    max_length_ = std::max(max_length_, v.bytes[i].size());
  }
}

std::vector<int32_t> TokenSpellings::longest_match(const std::string& text, size_t max_tokens) const {
  std::vector<int32_t> tokens;
  size_t at = 0;
  while (at < text.size() && tokens.size() < max_tokens) {
    int32_t found = -1;
    size_t length = std::min(max_length_, text.size() - at);
    for (; length > 0; --length) {
      const auto it = ids_.find(text.substr(at, length));
      if (it != ids_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) break;
    tokens.push_back(found);
    at += length;
  }
  return tokens;
}

std::vector<int32_t> JumpForwardSource::forced_tokens(const DraftQuery& q) {
  const grammar::TokenConstraint& constraint = *q.sampling->constraint;
  Tracked& t = tracked_[q.id];
  if (!t.state) t.state = std::make_unique<grammar::ConstraintState>(constraint);
  const auto outputs = q.tokens.subspan(static_cast<size_t>(q.num_prompt_tokens));
  if (outputs.size() < t.consumed) {  // cannot happen (outputs only grow); start over to be safe
    t.state = std::make_unique<grammar::ConstraintState>(constraint);
    t.consumed = 0;
  }
  for (; t.consumed < outputs.size(); ++t.consumed)
    if (!t.state->accept(outputs[t.consumed])) return {};  // a token the grammar refused: the runner failed it
  std::unique_ptr<Spelled>& spelled = spellings_[constraint.vocabulary.get()];
  if (!spelled) spelled.reset(new Spelled{constraint.vocabulary, TokenSpellings(constraint.vocabulary->vocab)});
  // Forced text cut into tokens, and forced tokens (a special marker a token reference names, e.g.
  // Mistral's [TOOL_CALLS]), one after another while the grammar forces them.
  const auto max_tokens = static_cast<size_t>(std::max(0, q.max_drafts));
  std::vector<int32_t> tokens;
  while (tokens.size() < max_tokens) {
    const std::string forced = t.state->forced_bytes(kMaxForcedBytes);
    std::vector<int32_t> step;
    if (!forced.empty()) {
      step = spelled->spellings.longest_match(forced, max_tokens - tokens.size());
    } else if (const auto only = forced_token(*t.state, constraint)) {
      step = {*only};
    }
    // Only tokens the grammar takes one after another (it always should: they are forced).
    size_t taken = 0;
    while (taken < step.size() && t.state->accept(step[taken])) ++taken;
    tokens.insert(tokens.end(), step.begin(), step.begin() + std::ptrdiff_t(taken));
    if (taken == 0 || taken < step.size()) break;
  }
  t.state->rollback(tokens.size());
  return tokens;
}

std::optional<int32_t> JumpForwardSource::forced_token(grammar::ConstraintState& state,
                                                       const grammar::TokenConstraint& constraint) {
  // Byte-only grammars force nothing that forced_bytes does not show: skip their masks.
  if (!constraint.grammar->has_token_edges() || state.is_complete()) return std::nullopt;
  const grammar::TokenMask& mask = state.allowed();
  std::optional<int32_t> only;
  for (size_t w = 0; w < mask.size(); ++w) {
    if (mask[w] == 0) continue;
    if (only || (mask[w] & (mask[w] - 1)) != 0) return std::nullopt;
    only = static_cast<int32_t>(w * 64 + size_t(__builtin_ctzll(mask[w])));
  }
  return only;
}

void JumpForwardSource::propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) {
  trace::Scope scope("jump_forward", "spec");
  out.assign(queries.size(), Drafts{});
  inner_queries_.clear();
  inner_index_.clear();
  for (size_t i = 0; i < queries.size(); ++i) {
    const DraftQuery& q = queries[i];
    if (q.sampling != nullptr && q.sampling->constraint && q.max_drafts > 0) {
      out[i].tokens = forced_tokens(q);
      if (!out[i].tokens.empty()) continue;
    }
    if (!inner_) continue;
    DraftQuery inner = q;
    inner.max_drafts = std::min(q.max_drafts, inner_max_drafts_);
    inner_queries_.push_back(inner);
    inner_index_.push_back(i);
  }
  if (!inner_ || inner_queries_.empty()) return;
  inner_->propose(inner_queries_, inner_out_);
  for (size_t k = 0; k < inner_index_.size(); ++k) out[inner_index_[k]] = std::move(inner_out_[k]);
}

void JumpForwardSource::forget(uint64_t id) {
  tracked_.erase(id);
  if (inner_) inner_->forget(id);
}

}  // namespace lemma::spec
