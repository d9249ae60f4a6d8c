#include "lemma/spec/draft_model_proposer.h"

#include <algorithm>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"
#include "lemma/sampling/speculative_sampling.h"

namespace lemma::spec {

namespace {

// Mixed into a request's seed so the draft's draws never coincide with the target's draws at the
// same position (the acceptance test must be independent of how the draft was drawn).
constexpr uint64_t kDraftSeedSalt = 0x5DEECE66D2B7E151ull;

}  // namespace

DraftModelProposer::DraftModelProposer(const Model& draft, int64_t target_vocab_size, const DraftModelConfig& config)
    : draft_(draft),
      config_(config),
      workspace_(std::max(1, config.num_threads), draft.runtime().pin_threads),
      table_(std::max<int64_t>(0, config.num_blocks)) {
  if (config.num_blocks <= 0 || config.block_size <= 0)
    fail<InvalidArgument>("draft model: KV blocks ({}) and block size ({}) must be positive", config.num_blocks,
                          config.block_size);
  if (config.tree_width < 1) fail<InvalidArgument>("draft model: tree width {}; use at least 1", config.tree_width);
  if (draft.config().vocab_size != target_vocab_size)
    fail<InvalidArgument>("draft model: its vocabulary has {} tokens, the target's {}; speculation needs the same vocabulary",
                          draft.config().vocab_size, target_vocab_size);
  cache_ = KvCache::for_model(draft.config(), config.num_blocks, config.block_size, config.kv_dtype);
}

void DraftModelProposer::forget(uint64_t id) { table_.forget(id); }

void DraftModelProposer::propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) {
  trace::Scope t("draft_model", "spec");
  table_.begin_call();
  out.assign(queries.size(), Drafts{});
  for (const DraftQuery& q : queries)
    if (q.max_drafts > 0) table_.mark(q.id);  // marked first: none of these is evicted
  std::vector<Active> active;
  active.reserve(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    const DraftQuery& q = queries[i];
    if (q.max_drafts <= 0 || q.tokens.empty() || q.sampling == nullptr) continue;
    State& st = table_.at(q.id);
    // The cached prefix still valid: shared with the request's tokens, and short of its last token
    // (whose logits the first draft needs).
    const size_t limit = std::min(st.cached.size(), q.tokens.size() - 1);
    const auto mismatch = std::mismatch(st.cached.begin(), st.cached.begin() + static_cast<std::ptrdiff_t>(limit), q.tokens.begin());
    const auto keep = static_cast<int64_t>(mismatch.first - st.cached.begin());
    st.cached.resize(static_cast<size_t>(keep));
    if (!table_.reserve(st, static_cast<int64_t>(q.tokens.size()) + q.max_drafts, config_.block_size)) continue;
    SamplingParams params = *q.sampling;
    params.seed = params.seed.value_or(config_.default_seed ^ q.id) ^ kDraftSeedSalt;
    params.logprobs = false;
    Active a{i, &st, Sampler(std::move(params), 0, draft_.runtime().isa), {q.tokens.begin(), q.tokens.end()}, keep, {}, false};
    active.push_back(std::move(a));
  }
  for (int32_t round = 0; !active.empty(); ++round) {
    draft_round(active, queries, out);
    // Sequences with all their drafts leave; their cache holds every token but the last draft.
    std::erase_if(active, [&](Active& a) {
      const DraftQuery& q = queries[a.query];
      if (!a.stopped && static_cast<int32_t>(out[a.query].tokens.size()) < q.max_drafts) return false;
      a.state->cached.assign(a.tokens.begin(), a.tokens.begin() + a.computed);
      if (!a.probs.empty()) out[a.query].probs = std::make_shared<const std::vector<float>>(std::move(a.probs));
      return true;
    });
  }
}

void DraftModelProposer::draft_round(std::vector<Active>& active, std::span<const DraftQuery> queries,
                                     std::vector<Drafts>& out) {
  const auto vocab = static_cast<size_t>(draft_.config().vocab_size);
  batch_.sequences.clear();
  for (const Active& a : active) {
    SequenceInput in;
    in.token_ids = std::span<const int32_t>(a.tokens).subspan(static_cast<size_t>(a.computed));
    in.num_cached = a.computed;
    in.block_table = a.state->blocks;
    in.logits = LogitsRequest::kLast;
    batch_.sequences.push_back(in);
  }
  const size_t rows = active.size();
  if (logits_.size() < rows * vocab) logits_.resize(rows * vocab);
  draft_.forward(batch_, cache_, workspace_, std::span<float>(logits_).first(rows * vocab));
  if (row_probs_.size() != vocab) row_probs_.resize(vocab);
  for (size_t r = 0; r < rows; ++r) {
    Active& a = active[r];
    const DraftQuery& q = queries[a.query];
    a.computed = static_cast<int64_t>(a.tokens.size());
    const std::span<const int32_t> all(a.tokens);
    const auto prompt = all.first(static_cast<size_t>(q.num_prompt_tokens));
    const auto outputs = all.subspan(static_cast<size_t>(q.num_prompt_tokens));
    a.sampler.seek(outputs.size());
    const auto logits = std::span<const float>(logits_).subspan(r * vocab, vocab);
    Drafts& d = out[a.query];
    const int32_t budget = q.max_drafts - static_cast<int32_t>(d.tokens.size());
    draw_candidates(a, logits, prompt, outputs, std::min(config_.tree_width, budget), candidates_);
    if (candidates_.empty()) {  // nothing finite to draw from: this request keeps the drafts it has
      a.stopped = true;
      continue;
    }
    const auto first = static_cast<int32_t>(d.tokens.size());
    for (int32_t token : candidates_) {
      d.tokens.push_back(token);
      if (config_.tree_width > 1) d.parents.push_back(a.spine);
    }
    a.spine = first;  // the next level hangs under the first candidate
    a.tokens.push_back(candidates_.front());
  }
}

void DraftModelProposer::draw_candidates(Active& a, std::span<const float> logits, std::span<const int32_t> prompt,
                                         std::span<const int32_t> outputs, int32_t count, std::vector<int32_t>& out) {
  out.clear();
  if (a.sampler.params().is_greedy()) {  // point masses: no rows to keep
    if (count == 1) {  // the sampler's own argmax, as plain decoding takes it
      const int32_t token = a.sampler.sample(logits, prompt, outputs, scratch_).token;
      if (token >= 0) out.push_back(token);
      return;
    }
    top_.resize(static_cast<size_t>(count));
    top_.resize(a.sampler.top_candidates(logits, prompt, outputs, scratch_, top_));
    for (const TokenLogprob& t : top_) out.push_back(t.token);
    return;
  }
  a.sampler.distribution(logits, prompt, outputs, scratch_, row_probs_);
  remaining_.assign(row_probs_.begin(), row_probs_.end());
  for (int32_t c = 0; c < count; ++c) {
    // Without replacement: each draw from what the earlier ones left (the verifier removes them too).
    const int32_t token = draw_from(remaining_, a.sampler.next_uniform());
    if (token < 0) break;  // fewer tokens than `count` carry mass: a count set by q alone
    remaining_[static_cast<size_t>(token)] = 0.0f;
    out.push_back(token);
    a.probs.insert(a.probs.end(), row_probs_.begin(), row_probs_.end());
  }
}

}  // namespace lemma::spec
