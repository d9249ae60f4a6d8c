#include "lemma/runtime/model_runner.h"

#include <algorithm>
#include <cmath>
#include <future>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"
#include "lemma/sampling/speculative_sampling.h"
#include "lemma/sched/draft_tree.h"

namespace lemma {

ModelRunner::ModelRunner(const Model& model, const ModelRunnerConfig& config)
    : model_(model), config_(config), workspace_(std::max(1, config.num_threads), model.runtime().pin_threads) {
  if (config.num_device_blocks <= 0 || config.block_size <= 0 || config.max_num_seqs <= 0 || config.num_host_blocks < 0)
    fail<InvalidArgument>("model runner: device blocks ({}), block size ({}) and max_num_seqs ({}) must be positive",
                          config.num_device_blocks, config.block_size, config.max_num_seqs);
  device_ = KvCache::for_model(model.config(), config.num_device_blocks, config.block_size, config.kv_dtype);
  if (config.num_host_blocks > 0)
    host_ = KvCache::for_model(model.config(), config.num_host_blocks, config.block_size, config.kv_dtype);
  logits_.resize(static_cast<size_t>(config.max_num_seqs * model.config().vocab_size));
  batch_.sequences.reserve(static_cast<size_t>(config.max_num_seqs));
}

std::span<const float> ModelRunner::last_logits(RequestId id) const {
  auto it = kept_logits_.find(id);
  if (it == kept_logits_.end()) return {};
  return it->second;
}

void ModelRunner::apply_plan_state(const StepPlan& plan) {
  for (RequestId id : plan.preempted_ids) state_.erase(id);
  for (const auto& n : plan.new_requests) {
    Sampler sampler(n.sampling, config_.default_seed ^ n.id, model_.runtime().isa);
    State s{n.token_ids, n.num_prompt_tokens, {n.block_table.begin(), n.block_table.end()}, std::move(sampler), nullptr,
            n.streaming, n.lora, n.pooling};
    if (n.sampling.constraint) {  // resumed requests replay their outputs into the grammar
      s.constraint = std::make_unique<grammar::ConstraintState>(*n.sampling.constraint);
      for (size_t k = static_cast<size_t>(n.num_prompt_tokens); k < n.token_ids.size(); ++k) {
        if (!s.constraint->accept(n.token_ids[k]))
          fail<InvalidArgument>("model runner: request {}: output token {} does not fit its grammar", n.id, n.token_ids[k]);
      }
    }
    state_.insert_or_assign(n.id, std::move(s));
  }
  for (const auto& d : plan.cached_requests) {
    auto it = state_.find(d.id);
    if (it == state_.end()) fail<InvalidArgument>("model runner: plan names request {} it has no state for", d.id);
    State& s = it->second;
    s.tokens.insert(s.tokens.end(), d.new_token_ids.begin(), d.new_token_ids.end());
    // A beam sequence's tokens were chosen by the engine, not sampled here: its grammar reads them now.
    if (s.constraint && s.sampler.params().beam_search) {
      for (int32_t t : d.new_token_ids)
        if (!s.constraint->accept(t))
          fail<InvalidArgument>("model runner: beam sequence {}: token {} does not fit its grammar", d.id, t);
    }
    s.block_table.insert(s.block_table.end(), d.new_block_ids.begin(), d.new_block_ids.end());
    for (const auto& r : d.replaced_blocks) s.block_table.at(static_cast<size_t>(r.index)) = r.block;
  }
}

void ModelRunner::copy_blocks(const StepPlan& plan) {
  if ((!plan.swap_out.empty() || !plan.swap_in.empty()) && host_.num_blocks() == 0)
    fail<InvalidArgument>("model runner: the plan swaps blocks but there is no host tier");
  for (const auto& c : plan.swap_out) copy_kv_block(device_, c.src, host_, c.dst);
  for (const auto& c : plan.swap_in) copy_kv_block(host_, c.src, device_, c.dst);
  for (const auto& c : plan.copies) copy_kv_block(device_, c.src, device_, c.dst);
}

RunnerOutput ModelRunner::run(const StepPlan& plan) {
  trace::Scope t_prepare("runner_prepare", "runtime");
  apply_plan_state(plan);
  copy_blocks(plan);
  RunnerOutput out;
  if (!plan.has_work()) return out;
  if (static_cast<int64_t>(plan.scheduled.size()) > config_.max_num_seqs)
    fail<InvalidArgument>("model runner: {} sequences in one step, more than max_num_seqs {}", plan.scheduled.size(),
                          config_.max_num_seqs);

  batch_.sequences.clear();
  // A drafted sequence reads its last token then its drafts: laid out first, so the spans stay put.
  size_t draft_input_size = 0;
  for (const auto& s : plan.scheduled) draft_input_size += s.draft_token_ids.empty() ? 0 : 1 + s.draft_token_ids.size();
  if (draft_inputs_.size() < draft_input_size) draft_inputs_.resize(draft_input_size);
  if (tree_parents_.size() < draft_input_size) tree_parents_.resize(draft_input_size);
  size_t draft_input_at = 0;
  for (const auto& s : plan.scheduled) {
    auto it = state_.find(s.id);
    if (it == state_.end()) fail<InvalidArgument>("model runner: request {} is scheduled but unknown", s.id);
    const State& st = it->second;
    const bool drafted = !s.draft_token_ids.empty();
    const int64_t known = drafted ? 1 : s.num_new_tokens;  // tokens of the request among those granted
    const int64_t end = s.num_computed_tokens + known;
    if (s.num_computed_tokens < 0 || end > static_cast<int64_t>(st.tokens.size()) ||
        (drafted && (end != static_cast<int64_t>(st.tokens.size()) ||
                     s.num_new_tokens != 1 + static_cast<int64_t>(s.draft_token_ids.size()))))
      fail<InvalidArgument>("model runner: request {} is granted tokens [{}, {}) but has {}", s.id,
                            s.num_computed_tokens, s.num_computed_tokens + s.num_new_tokens, st.tokens.size());
    if (s.draft_probs != nullptr &&
        s.draft_probs->size() < s.draft_token_ids.size() * static_cast<size_t>(model_.config().vocab_size))
      fail<InvalidArgument>("model runner: request {} has {} drafts but {} draft probabilities", s.id,
                            s.draft_token_ids.size(), s.draft_probs->size());
    if (!s.draft_parents.empty() && s.draft_parents.size() != s.draft_token_ids.size())
      fail<InvalidArgument>("model runner: request {} has {} drafts but {} draft parents", s.id, s.draft_token_ids.size(),
                            s.draft_parents.size());
    SequenceInput in;
    in.token_ids = std::span<const int32_t>(st.tokens).subspan(static_cast<size_t>(s.num_computed_tokens),
                                                               static_cast<size_t>(s.num_new_tokens));
    if (drafted) {
      draft_inputs_[draft_input_at] = st.tokens.back();
      std::copy(s.draft_token_ids.begin(), s.draft_token_ids.end(), draft_inputs_.begin() + std::ptrdiff_t(draft_input_at + 1));
      in.token_ids = std::span<const int32_t>(draft_inputs_).subspan(draft_input_at, static_cast<size_t>(s.num_new_tokens));
      if (!s.draft_parents.empty()) {  // the last token is the tree's root, draft d its node 1 + d
        tree_parents_[draft_input_at] = -1;
        for (size_t d = 0; d < s.draft_parents.size(); ++d) tree_parents_[draft_input_at + 1 + d] = s.draft_parents[d] + 1;
        in.tree_parents = std::span<const int32_t>(tree_parents_).subspan(draft_input_at, static_cast<size_t>(s.num_new_tokens));
      }
      draft_input_at += static_cast<size_t>(s.num_new_tokens);
    }
    in.num_cached = s.num_computed_tokens;
    in.block_table = st.block_table;
    in.streaming = st.streaming;
    in.lora = st.lora.get();
    in.logits = !s.needs_sample ? LogitsRequest::kNone : drafted ? LogitsRequest::kAll : LogitsRequest::kLast;
    batch_.sequences.push_back(in);
  }
  const int64_t rows = batch_.num_logit_rows();
  const auto logits_size = static_cast<size_t>(rows * model_.config().vocab_size);
  if (logits_.size() < logits_size) logits_.resize(logits_size);  // drafts add rows; grown once
  t_prepare.end();
  {
    // The grammar masks of the step's first sampled positions do not depend on the logits: they are
    // computed (or found in the per-state cache) on a thread of their own while the forward runs, so
    // a state's first mask is off the critical path. Sampling then finds them cached.
    std::future<void> masks = start_first_masks(plan);
    model_.forward(batch_, device_, workspace_,
                   std::span<float>(logits_).first(static_cast<size_t>(rows * model_.config().vocab_size)));
    if (masks.valid()) masks.get();
  }
  out.num_sequences = static_cast<int64_t>(batch_.sequences.size());
  out.num_tokens = batch_.num_tokens();
  if (!workspace_.moe.stats.empty()) out.moe = workspace_.moe.stats;
  trace::Scope t_sample("sampling", "kernel");
  sample(plan, out);
  t_sample.end();
  pool(plan, out);
  compact_accepted_trees();
  return out;
}

std::future<void> ModelRunner::start_first_masks(const StepPlan& plan) {
  mask_states_.clear();
  for (const auto& s : plan.scheduled) {
    if (!s.needs_sample) continue;
    State& st = state_.at(s.id);
    if (st.constraint && !st.sampler.params().beam_search) mask_states_.push_back(st.constraint.get());
  }
  if (mask_states_.empty()) return {};
  return std::async(std::launch::async, [this] {
    trace::Scope t("grammar_masks", "runtime");
    for (grammar::ConstraintState* c : mask_states_) c->allowed();
  });
}

void ModelRunner::sample(const StepPlan& plan, RunnerOutput& out) {
  const auto vocab = static_cast<size_t>(model_.config().vocab_size);
  sampled_.clear();
  size_t row = 0;
  for (const auto& s : plan.scheduled) {
    if (!s.needs_sample) continue;
    sampled_.push_back({&state_.at(s.id), row, s.draft_token_ids, s.draft_probs.get(), s.draft_parents,
                        s.num_computed_tokens});
    row += 1 + s.draft_token_ids.size();
  }
  samples_.resize(sampled_.size());
  if (candidates_.size() < sampled_.size()) candidates_.resize(sampled_.size());
  if (sampler_scratch_.size() < sampled_.size()) sampler_scratch_.resize(sampled_.size());
  if (verified_outputs_.size() < sampled_.size()) verified_outputs_.resize(sampled_.size());
  if (accepted_drafts_.size() < sampled_.size()) accepted_drafts_.resize(sampled_.size());
  if (masked_logits_.size() < sampled_.size()) masked_logits_.resize(sampled_.size());
  if (target_probs_.size() < sampled_.size()) target_probs_.resize(sampled_.size());
  if (candidate_rows_.size() < sampled_.size()) candidate_rows_.resize(sampled_.size());
  // A 152K-entry row costs 0.1-0.4 ms to sample (bench/sampling_bench): at 32 sequences that is
  // milliseconds per step, which the team's other threads would otherwise spend waiting. Sequences
  // go one per tile whatever the vocabulary (a small one costs a team dispatch, about a microsecond).
  workspace_.team->parallel_for(static_cast<int64_t>(sampled_.size()), 1, [&](int64_t r0, int64_t r1) {
    for (auto i = static_cast<size_t>(r0); i < static_cast<size_t>(r1); ++i) sample_sequence(i, vocab);
  });
  out.result.sampled.reserve(sampled_.size());  // one allocation, not one per doubling
  size_t i = 0;
  for (const auto& s : plan.scheduled) {
    if (!s.needs_sample) continue;
    std::vector<SampleResult>& results = samples_[i];
    if (keep_logits_) {  // the row of the last confirmed draft (or of the last token)
      const std::vector<int32_t>& accepted = accepted_drafts_[i];
      const size_t last_row = sampled_[i].first_row + (accepted.empty() ? 0 : 1 + static_cast<size_t>(accepted.back()));
      const auto logits = std::span<const float>(logits_).subspan(last_row * vocab, vocab);
      kept_logits_[s.id].assign(logits.begin(), logits.end());
    }
    const bool constrained = sampled_[i].state->constraint != nullptr;
    if (sampled_[i].state->sampler.params().beam_search) {  // candidates, no sample (may be none)
      out.result.sampled.push_back({s.id, {}, std::move(candidates_[i])});
      ++i;
      continue;
    }
    ++i;
    if (results.back().token == kNoToken) {
      // A grammar that allows nothing more (e.g. complete while EOS is ignored) ends only its request:
      // no sample, which the scheduler finishes as failed.
      if (constrained) {
        out.result.sampled.push_back({s.id, {}, {}});
        continue;
      }
      fail<Error>("request {}: no finite logit to sample from (the model produced NaN/-inf everywhere)", s.id);
    }
    out.result.sampled.push_back({s.id, std::move(results), {}});
  }
}

// `logits` with every token the sequence's grammar refuses set to -inf, in `out` (grown once).
std::span<const float> ModelRunner::constrained(State& st, std::span<const float> logits, std::vector<float>& out) {
  const grammar::TokenMask& allowed = st.constraint->allowed();
  out.assign(logits.begin(), logits.end());
  // A word at a time: masks are mostly all-refused words (a few tokens allowed) or all-allowed ones.
  const size_t n = out.size();
  for (size_t base = 0; base < n; base += 64) {
    const size_t word = base >> 6;
    const uint64_t bits = word < allowed.size() ? allowed[word] : 0;
    const size_t end = std::min(n, base + 64);
    if (bits == ~uint64_t{0}) continue;
    if (bits == 0) {
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(base), out.begin() + static_cast<std::ptrdiff_t>(end), -INFINITY);
      continue;
    }
    for (size_t id = base; id < end; ++id)
      if (!((bits >> (id - base)) & 1u)) out[id] = -INFINITY;
  }
  return out;
}

// One sample per logits row of the sequence, in order, while each equals the next draft: draws are
// keyed by output position, so the tokens are those plain decoding would sample one step at a time.
// A draft tree is walked the same way: after each sample, the row of the child drafting it (the
// first such child), so the samples are again plain decoding's, down the path that drafted them.
// Drafts drawn at random (with their distribution) are kept by rejection sampling instead: the token
// at each position is still distributed as plain decoding's, with draws of their own. Under a node of
// a stochastic tree, its children (drawn without replacement from the distribution the first of them
// carries, in index order) are verified together by recursive rejection sampling
// (speculative_sampling.h): one uniform per child, then one for the residual.
void ModelRunner::sample_sequence(size_t i, size_t vocab) {
  const SampledSequence& seq = sampled_[i];
  State& st = *seq.state;
  const std::span<const int32_t> tokens(st.tokens);
  const auto prompt = tokens.first(static_cast<size_t>(st.num_prompt_tokens));
  std::span<const int32_t> outputs = tokens.subspan(static_cast<size_t>(st.num_prompt_tokens));
  std::vector<SampleResult>& results = samples_[i];
  results.clear();
  std::vector<int32_t>& accepted = accepted_drafts_[i];
  accepted.clear();
  if (const auto& beam = st.sampler.params().beam_search) {
    // Beam search: the row's best 2W continuations by log-probability (masked by the grammar).
    auto logits = std::span<const float>(logits_).subspan(seq.first_row * vocab, vocab);
    if (st.constraint) logits = constrained(st, logits, masked_logits_[i]);
    std::vector<TokenLogprob>& cands = candidates_[i];
    cands.resize(std::min(vocab, 2 * static_cast<size_t>(beam->width)));
    cands.resize(st.sampler.top_candidates(logits, prompt, outputs, sampler_scratch_[i], cands));
    return;
  }
  std::vector<int32_t>& verified = verified_outputs_[i];
  if (!seq.drafts.empty()) verified.assign(outputs.begin(), outputs.end());
  for (int32_t node = -1;;) {  // the draft whose row samples next (-1: the last token)
    st.sampler.seek(static_cast<uint64_t>(outputs.size()));
    auto logits = std::span<const float>(logits_).subspan((seq.first_row + static_cast<size_t>(node + 1)) * vocab, vocab);
    if (st.constraint) logits = constrained(st, logits, masked_logits_[i]);
    CandidateRows& c = candidate_rows_[i];
    if (seq.draft_probs != nullptr)
      draft_children(seq.draft_parents, static_cast<int64_t>(seq.drafts.size()), node, c.children);
    if (seq.draft_probs != nullptr && !c.children.empty()) {
      std::vector<float>& p = target_probs_[i];
      p.resize(vocab);
      st.sampler.distribution(logits, prompt, outputs, sampler_scratch_[i], p);
      const auto q = std::span<const float>(*seq.draft_probs).subspan(static_cast<size_t>(c.children[0]) * vocab, vocab);
      c.tokens.clear();
      c.uniforms.clear();
      for (int32_t child : c.children) {
        c.tokens.push_back(seq.drafts[static_cast<size_t>(child)]);
        c.uniforms.push_back(st.sampler.next_uniform());
      }
      const double u_residual = st.sampler.next_uniform();
      const CandidateVerdict verdict = verify_candidates(p, q, c.tokens, c.uniforms, u_residual, c.scratch);
      results.push_back(st.sampler.describe(logits, verdict.token, sampler_scratch_[i]));
    } else {
      results.push_back(st.sampler.sample(logits, prompt, outputs, sampler_scratch_[i]));
    }
    if (st.constraint && results.back().token != kNoToken && !st.constraint->accept(results.back().token))
      results.back().token = kNoToken;  // cannot happen: the row allowed only what the grammar reads
    if (results.back().token == kNoToken) break;
    node = find_draft_child(seq.draft_parents, seq.drafts, node, results.back().token);
    if (node < 0) break;
    accepted.push_back(node);
    verified.push_back(results.back().token);
    outputs = verified;
  }
}

void ModelRunner::compact_accepted_trees() {
  for (size_t i = 0; i < sampled_.size(); ++i) {
    const SampledSequence& seq = sampled_[i];
    if (seq.draft_parents.empty()) continue;
    // Draft d sat in slot num_cached + 1 + d; the k-th confirmed one belongs in num_cached + 1 + k.
    // A draft's index is at least its depth, so no move overwrites a later one's source.
    moved_from_.clear();
    moved_to_.clear();
    const std::vector<int32_t>& accepted = accepted_drafts_[i];
    for (size_t k = 0; k < accepted.size(); ++k) {
      if (static_cast<size_t>(accepted[k]) == k) continue;
      moved_from_.push_back(seq.num_cached + 1 + accepted[k]);
      moved_to_.push_back(seq.num_cached + 1 + static_cast<int64_t>(k));
    }
    if (!moved_from_.empty()) copy_kv_slots(device_, seq.state->block_table, moved_from_, moved_to_);
  }
}

KvCache ModelRunner::export_blocks(std::span<const int32_t> blocks) {
  KvCache out(device_.num_layers(), static_cast<int64_t>(blocks.size()), device_.block_size(), device_.num_kv_heads(),
              device_.head_dim(), device_.dtype(), device_.latent());
  for (size_t i = 0; i < blocks.size(); ++i) copy_kv_block(device_, blocks[i], out, static_cast<int64_t>(i));
  return out;
}

void ModelRunner::import_blocks(KvCache& from, std::span<const int32_t> dst) {
  if (static_cast<size_t>(from.num_blocks()) != dst.size())
    fail<InvalidArgument>("KV import: {} blocks received for {} destinations", from.num_blocks(), dst.size());
  for (size_t i = 0; i < dst.size(); ++i)
    if (dst[i] >= 0) copy_kv_block(from, static_cast<int64_t>(i), device_, dst[i]);
}

}  // namespace lemma
