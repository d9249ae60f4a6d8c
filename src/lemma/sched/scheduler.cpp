#include "lemma/sched/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/sched/draft_tree.h"

namespace lemma {

Scheduler::Scheduler(const SchedulerConfig& config, const KvManagerConfig& kv_config)
    : config_(config), kv_(kv_config) {
  if (config.max_num_batched_tokens < 1) fail<InvalidArgument>("max_num_batched_tokens {} < 1", config.max_num_batched_tokens);
  if (config.max_num_seqs < 1) fail<InvalidArgument>("max_num_seqs {} < 1", config.max_num_seqs);
  if (config.max_model_len < 1) fail<InvalidArgument>("max_model_len {} < 1", config.max_model_len);
  if (!config.enable_chunked_prefill && config.max_num_batched_tokens < config.max_model_len)
    fail<InvalidArgument>("without chunked prefill max_num_batched_tokens ({}) must be >= max_model_len ({})",
                          config.max_num_batched_tokens, config.max_model_len);
}

void Scheduler::validate(const Request& request) const {
  const RequestId id = request.id();
  if (requests_.count(id) != 0) fail<InvalidArgument>("request id {} is already queued", id);
  if (request.num_prompt_tokens() == 0) fail<InvalidArgument>("request {} has an empty prompt", id);
  if (request.stop().max_tokens < 1) fail<InvalidArgument>("request {}: max_tokens {} < 1", id, request.stop().max_tokens);
  const int64_t max_len = request.num_prompt_tokens() + request.stop().max_tokens;
  if (request.num_prompt_tokens() >= config_.max_model_len)
    fail<InvalidArgument>("request {}: prompt of {} tokens leaves no room within max_model_len {}", id,
                          request.num_prompt_tokens(), config_.max_model_len);
  const int64_t capacity = static_cast<int64_t>(kv_.device_pool().num_blocks() - kv_.watermark_blocks());
  const int64_t num_tokens = std::min(max_len, config_.max_model_len);
  int64_t max_step_tokens = std::min(num_tokens, config_.max_num_batched_tokens);
  if (config_.enable_chunked_prefill && config_.long_prefill_token_threshold > 0)
    max_step_tokens = std::min(max_step_tokens, config_.long_prefill_token_threshold);
  if (request.is_streaming()) validate_streaming(request);
  const int32_t live_blocks = request.is_streaming()
                                  ? static_cast<int32_t>(std::min<int64_t>(
                                        kv_.blocks_for(num_tokens),
                                        request.streaming().max_live_blocks(kv_.block_size(), max_step_tokens)))
                                  : kv_.max_live_blocks(num_tokens, max_step_tokens);
  if (live_blocks > capacity)
    fail<InvalidArgument>("request {}: {} tokens need more than the KV cache's {} usable blocks", id, num_tokens,
                          capacity);
}

void Scheduler::validate_streaming(const Request& request) const {
  const RequestId id = request.id();
  if (const std::string error = streaming_window_error(request.streaming(), 0); !error.empty())
    fail<InvalidArgument>("request {}: {}", id, error);
  if (request.is_beam()) fail<InvalidArgument>("request {}: beam search is not supported with attention sinks", id);
  if (kv_.config().sliding_window > 0)
    fail<InvalidArgument>("request {}: attention sinks are not supported on a model with sliding-window layers", id);
}

void Scheduler::add_request(Request request) {
  validate(request);
  const RequestId id = request.id();
  request.set_status(RequestStatus::kWaiting);
  // Decode steps then append without reallocating (the longest a request gets is max_model_len).
  request.reserve_tokens(std::min(request.num_prompt_tokens() + request.stop().max_tokens, config_.max_model_len));
  requests_.emplace(id, Entry{std::move(request), 0, {}});
  enqueue_waiting(id, /*at_front=*/false);
}

bool Scheduler::before(const Request& a, const Request& b) const {
  return std::tuple(a.priority(), a.arrival_time(), a.id()) < std::tuple(b.priority(), b.arrival_time(), b.id());
}

void Scheduler::enqueue_waiting(RequestId id, bool at_front) {
  if (config_.policy == SchedulingPolicy::kFcfs) {
    at_front ? waiting_.push_front(id) : waiting_.push_back(id);
    return;
  }
  const Request& r = entry(id).request;
  const auto pos = std::find_if(waiting_.begin(), waiting_.end(),
                                [&](RequestId other) { return before(r, entry(other).request); });
  waiting_.insert(pos, id);
}

int64_t Scheduler::grant(const Request& r, int64_t num_computed_tokens, int64_t budget) const {
  int64_t n = std::min(r.num_tokens() - num_computed_tokens, budget);
  if (config_.enable_chunked_prefill && config_.long_prefill_token_threshold > 0)
    n = std::min(n, config_.long_prefill_token_threshold);
  return n;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  plan.step_id = next_step_id_++;
  if (config_.policy == SchedulingPolicy::kPriority)
    std::stable_sort(running_.begin(), running_.end(),
                     [&](RequestId a, RequestId b) { return before(entry(a).request, entry(b).request); });
  // One allocation per list rather than one per doubling.
  plan.cached_requests.reserve(running_.size());
  plan.scheduled.reserve(std::min(running_.size() + waiting_.size(), static_cast<size_t>(config_.max_num_seqs)));
  int64_t budget = config_.max_num_batched_tokens;
  bool preempted = false;
  drop_dead_blocks();
  propose_drafts();
  schedule_running(plan, budget, preempted);
  // After a preemption the pool is tight: admitting now would only preempt again next step.
  if (!preempted) schedule_waiting(plan, budget);
  while (plan.scheduled.empty() && !waiting_.empty() && preempt_parked(plan)) schedule_waiting(plan, budget);
  plan.num_batched_tokens = config_.max_num_batched_tokens - budget;
  return plan;
}

// Sliding window: blocks wholly before what the next forward of each running request reads go back
// to the pool first, so this step's growth and admissions can use them. The runner learns of them
// with the request's next diff.
void Scheduler::drop_dead_blocks() {
  for (RequestId id : running_) {
    Entry& e = entry(id);
    const Request& r = e.request;
    num_blocks_dropped_ += static_cast<uint64_t>(
        r.is_streaming() ? kv_.drop_streaming_blocks(id, r.num_computed_tokens(), r.streaming(), &e.dropped_unsent)
                         : kv_.drop_dead_blocks(id, r.num_computed_tokens(), &e.dropped_unsent));
  }
}

void Scheduler::schedule_running(StepPlan& plan, int64_t& budget, bool& preempted) {
  size_t i = 0;
  size_t next_query = 0;  // draft_queries_ follow running_'s order
  std::vector<int32_t> drafts, draft_parents;
  std::shared_ptr<const std::vector<float>> draft_probs;
  while (i < running_.size() && budget > 0) {
    Entry& e = entry(running_[i]);
    Request& r = e.request;
    const int64_t c = r.num_computed_tokens();
    int64_t n = grant(r, c, budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    drafts.clear();
    draft_parents.clear();
    draft_probs.reset();
    // (A constrained request's drafts are checked by the runner, which masks each position's row by the
    // grammar state after the samples before it: a draft the grammar refuses is simply not confirmed.)
    // (A beam sequence never drafts: it samples nothing, the engine chooses its tokens; propose_drafts
    // asks nothing for it.)
    while (next_query < draft_queries_.size() && draft_queries_[next_query].id != r.id()) ++next_query;
    if (next_query < draft_queries_.size() && n == 1 && budget > 1) {
      const Drafts& d = proposals_[next_query];
      const size_t count = std::min(d.tokens.size(), static_cast<size_t>(budget - 1));
      drafts.assign(d.tokens.begin(), d.tokens.begin() + static_cast<std::ptrdiff_t>(count));
      if (count > 0) draft_probs = d.probs;
      // A tree's first `count` drafts are a tree (parents come first).
      if (!d.parents.empty() && count > 0)
        draft_parents.assign(d.parents.begin(), d.parents.begin() + static_cast<std::ptrdiff_t>(count));
    }
    std::optional<SlotAllocation> alloc;
    // Drafts only where their slots fit without preempting anyone.
    // (A tree's drafts take a slot each, as a chain's: the runner moves the accepted ones together.)
    if (!drafts.empty() && !(alloc = kv_.allocate_slots(r.id(), c, n + static_cast<int64_t>(drafts.size())))) {
      drafts.clear();
      draft_parents.clear();
      draft_probs.reset();
    }
    if (!drafts.empty()) n += static_cast<int64_t>(drafts.size());
    while (!alloc && !(alloc = kv_.allocate_slots(r.id(), c, n))) {
      const bool self = running_.back() == r.id();
      preempt_back(plan);
      preempted = true;
      if (self) break;
    }
    if (!alloc) break;  // r itself was preempted; everything after it already was
    for (const auto& rep : alloc->replaced) plan.copies.push_back(rep.copy);
    if (e.num_tokens_sent == 0) {  // forked this step: the runner has no state for it yet
      add_new_request(plan, e, n);
      budget -= n;
      ++i;
      continue;
    }
    CachedRequestData d;
    d.id = r.id();
    const auto tokens = r.token_ids();
    d.new_token_ids.assign(tokens.begin() + e.num_tokens_sent, tokens.end());
    e.num_tokens_sent = r.num_tokens();
    d.new_block_ids = std::move(alloc->new_blocks);
    for (const auto& rep : alloc->replaced) d.replaced_blocks.push_back({rep.index, rep.copy.dst});
    for (int32_t index : e.dropped_unsent) d.replaced_blocks.push_back({index, kNoBlock});
    e.dropped_unsent.clear();
    d.num_computed_tokens = c;
    plan.cached_requests.push_back(std::move(d));
    plan.scheduled.push_back(
        {r.id(), c, n, c + n == r.num_tokens() || !drafts.empty(), drafts, draft_probs, draft_parents});
    num_draft_tokens_ += drafts.size();
    budget -= n;
    ++i;
  }
}

// How many decode steps a request whose single draft was refused goes without drafts.
constexpr int32_t kDraftPauseSteps = 4;

void Scheduler::propose_drafts() {
  draft_queries_.clear();
  const int num_tokens = config_.speculative.num_tokens;
  if (draft_source_ == nullptr || num_tokens <= 0) return;
  const int limit = config_.speculative.disable_by_batch_size;
  if (limit > 0 && static_cast<int64_t>(running_.size()) > limit) return;
  for (RequestId id : running_) {
    Entry& e = entry(id);
    const Request& r = e.request;
    // Only a request whose next step is its one decode token (the runner has its state); never a beam.
    // Nor a streaming request (attention sinks): plain decoding, one token per step.
    if (r.is_beam() || r.is_streaming() || r.num_computed_tokens() + 1 != r.num_tokens() || e.num_tokens_sent == 0)
      continue;
    if (e.draft_pause > 0) {
      --e.draft_pause;
      continue;
    }
    const int64_t want = e.draft_len > 0 ? e.draft_len : num_tokens;
    // Never past max_model_len or the request's max_tokens (the last sample of a step is not a draft).
    const int64_t limit = std::min({want, config_.max_num_batched_tokens - 1, config_.max_model_len - r.num_tokens(),
                                    r.stop().max_tokens - r.num_output_tokens() - 1});
    if (limit <= 0) continue;
    draft_queries_.push_back({id, r.token_ids(), r.num_prompt_tokens(), static_cast<int32_t>(limit), &r.sampling()});
  }
  if (draft_queries_.empty()) return;
  draft_source_->propose(draft_queries_, proposals_);
  if (proposals_.size() != draft_queries_.size())
    throw std::logic_error(fmt::format("Scheduler: the draft source answered {} of {} queries", proposals_.size(),
                                       draft_queries_.size()));
  for (const Drafts& d : proposals_)
    if (!d.parents.empty() && (d.parents.size() != d.tokens.size() || !is_valid_draft_tree(d.parents)))
      throw std::logic_error("Scheduler: the draft source proposed a malformed draft tree");
}

void Scheduler::preempt_back(StepPlan& plan) { preempt(plan, running_.back(), /*at_front=*/true); }

bool Scheduler::preempt_parked(StepPlan& plan) {
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    const Request& r = entry(*it).request;
    if (!r.is_beam() || r.num_computed_tokens() < r.num_tokens()) continue;
    preempt(plan, *it, /*at_front=*/false);
    return true;
  }
  return false;
}

void Scheduler::preempt(StepPlan& plan, RequestId id, bool at_front) {
  running_.erase(std::find(running_.begin(), running_.end(), id));
  Entry& e = entry(id);
  Request& r = e.request;
  // A parked beam sequence recomputes: swapped back in, it would have no token to compute.
  const bool swap = config_.preemption_mode == PreemptionMode::kSwap && r.num_computed_tokens() < r.num_tokens();
  if (swap && kv_.can_swap_out(id)) {
    const auto copies = kv_.swap_out(id);
    plan.swap_out.insert(plan.swap_out.end(), copies.begin(), copies.end());
    r.set_status(RequestStatus::kSwapped);
    ++num_swap_outs_;
  } else {
    if (swap) {
      ++num_swap_fallbacks_;
      log().warn("request {}: swap preemption falls back to recompute: {} blocks to swap, the host tier has {} free "
                 "of {}",
                 id, kv_.num_held_blocks(id), kv_.num_free_host_blocks(), kv_.host_pool().num_blocks());
    }
    kv_.free(id);
    r.set_num_computed_tokens(0);
    r.set_status(RequestStatus::kPreempted);
  }
  r.count_preemption();
  ++num_preemptions_;
  e.num_tokens_sent = 0;
  e.dropped_unsent.clear();
  plan.preempted_ids.push_back(id);
  enqueue_waiting(id, at_front);
}

void Scheduler::schedule_waiting(StepPlan& plan, int64_t& budget) {
  while (!waiting_.empty() && budget > 0 && num_running() < config_.max_num_seqs) {
    const RequestId id = waiting_.front();
    Entry& e = entry(id);
    Request& r = e.request;
    int64_t c = 0;
    int64_t n = 0;
    if (r.status() == RequestStatus::kSwapped) {
      c = r.num_computed_tokens();
      n = grant(r, c, budget);
      if (!config_.enable_chunked_prefill && c + n < r.num_tokens()) break;
      const int32_t extra = std::max(0, kv_.blocks_for(c + n) - kv_.num_table_blocks(id));
      if (!kv_.can_swap_in(id, extra)) break;
      const auto copies = kv_.swap_in(id);
      plan.swap_in.insert(plan.swap_in.end(), copies.begin(), copies.end());
      ++num_swap_ins_;
      const auto alloc = kv_.allocate_slots(id, c, n);
      if (!alloc || !alloc->replaced.empty())
        throw std::logic_error(fmt::format("Scheduler: swap-in of request {} planned but slots failed", id));
    } else {
      // A streaming request neither reads nor feeds the prefix cache: its blocks past S + W hold
      // streaming K/V, never a plain prefix's.
      // Nor does a pooling request read it: its result needs every prompt row's hidden state.
      const PrefixHit hit = r.is_streaming() || r.is_pooling() ? PrefixHit{} : kv_.find_cached_prefix(r.token_ids(), r.extra_keys());
      c = hit.num_tokens;
      n = grant(r, c, budget);
      if (!config_.enable_chunked_prefill && c + n < r.num_tokens()) break;
      if (!kv_.allocate_slots(id, c, n, &hit, /*admission=*/true)) break;
      if (r.status() == RequestStatus::kWaiting) {  // first admission: what usage and metrics report
        r.set_num_cached_tokens(c);
        ++prefix_.queries;
        prefix_.hits += c > 0;
        prefix_.queried_tokens += static_cast<uint64_t>(r.num_tokens());
        prefix_.hit_tokens += static_cast<uint64_t>(c);
      }
      r.set_num_computed_tokens(c);
    }
    waiting_.pop_front();
    r.set_status(RequestStatus::kRunning);
    running_.push_back(id);
    add_new_request(plan, e, n);
    budget -= n;
  }
}

void Scheduler::add_new_request(StepPlan& plan, Entry& e, int64_t num_new_tokens) {
  const Request& r = e.request;
  NewRequestData d;
  d.id = r.id();
  d.first_scheduled = r.num_preemptions() == 0;
  d.token_ids.assign(r.token_ids().begin(), r.token_ids().end());
  d.num_prompt_tokens = r.num_prompt_tokens();
  d.num_computed_tokens = r.num_computed_tokens();
  const auto table = kv_.block_table(r.id());
  d.block_table.assign(table.begin(), table.end());
  d.sampling = r.sampling();
  d.streaming = r.streaming();
  d.pooling = r.options().pooling;
  d.lora = r.options().lora;
  e.num_tokens_sent = r.num_tokens();
  e.dropped_unsent.clear();  // the table above shows them
  plan.new_requests.push_back(std::move(d));
  plan.scheduled.push_back(
      {r.id(), r.num_computed_tokens(), num_new_tokens, r.num_computed_tokens() + num_new_tokens == r.num_tokens()});
}

std::vector<RequestOutput> Scheduler::update(const StepPlan& plan, StepResult result) {
  // Sampled tokens by request id, in a buffer kept across steps (no allocation per step).
  // A request named twice takes its last entry.
  sampled_index_.clear();
  for (size_t i = 0; i < result.sampled.size(); ++i) sampled_index_.emplace_back(result.sampled[i].id, i);
  std::sort(sampled_index_.begin(), sampled_index_.end());
  const auto find_sampled = [&](RequestId id) -> SampledTokens* {
    const auto it = std::upper_bound(sampled_index_.begin(), sampled_index_.end(),
                                     std::pair<RequestId, size_t>(id, SIZE_MAX));
    return it != sampled_index_.begin() && std::prev(it)->first == id ? &result.sampled[std::prev(it)->second]
                                                                       : nullptr;
  };
  std::vector<RequestOutput> outputs;
  outputs.reserve(plan.scheduled.size());
  for (const ScheduledRequest& s : plan.scheduled) {
    const auto it = requests_.find(s.id);
    if (it == requests_.end()) continue;  // aborted since the plan
    Request& r = it->second.request;
    if (r.status() != RequestStatus::kRunning || r.num_computed_tokens() != s.num_computed_tokens) continue;
    const bool drafted = !s.draft_token_ids.empty();
    if (!drafted) {
      r.set_num_computed_tokens(s.num_computed_tokens + s.num_new_tokens);
      if (!r.is_streaming()) kv_.cache_computed_blocks(s.id, r.token_ids(), r.num_computed_tokens(), r.extra_keys());
    }
    if (!s.needs_sample || r.is_beam()) continue;  // a beam's candidates go to the engine, which picks
    SampledTokens* sampled = find_sampled(s.id);
    if (sampled == nullptr || sampled->samples.empty() || sampled->samples.size() > s.draft_token_ids.size() + 1) {
      outputs.push_back(finish(s.id, RequestStatus::kFinishedFailed, {}));
      continue;
    }
    if (drafted) {
      // The samples confirm drafts down one path (a chain's only one) to the first that differs: the
      // K/V of the last token and of the confirmed drafts is valid (the runner moved a tree's into the
      // slots after the last token), the rest of the step's slots are rewritten by later steps.
      const size_t accepted = sampled->samples.size() - 1;
      int32_t node = -1;  // the last token
      for (size_t k = 0; k < accepted; ++k) {
        node = find_draft_child(s.draft_parents, s.draft_token_ids, node, sampled->samples[k].token);
        if (node < 0)
          throw std::logic_error(fmt::format("Scheduler: request {} sample {} does not confirm its draft", s.id, k));
      }
      num_accepted_draft_tokens_ += accepted;
      ++num_verifications_by_accepted_[std::min<size_t>(accepted, num_verifications_by_accepted_.size() - 1)];
      // Longer drafts while all are confirmed, half as many when none is: a request whose text does
      // not repeat its context costs about one extra token per step, not K.
      Entry& e = it->second;
      // (A tree is all confirmed when its deepest path is.)
      const auto drafted_now = static_cast<int32_t>(s.draft_token_ids.size());
      const int32_t current = e.draft_len > 0 ? e.draft_len : config_.speculative.num_tokens;
      const auto levels = static_cast<size_t>(draft_tree_levels(s.draft_parents, drafted_now));
      if (accepted == levels) {
        e.draft_len = std::min(config_.speculative.num_tokens, std::max(current, drafted_now) + 1);
      } else if (accepted == 0) {
        e.draft_len = std::max(1, current / 2);
        if (current == 1) e.draft_pause = kDraftPauseSteps;  // then one draft again, as a probe
      }
    }
    std::vector<int32_t> new_tokens;
    std::vector<SampleResult> logprobs;
    std::optional<RequestStatus> done;
    for (SampleResult& sample : sampled->samples) {
      r.append_output_tokens(std::span(&sample.token, 1));
      new_tokens.push_back(sample.token);
      if (r.sampling().logprobs) logprobs.push_back(std::move(sample));
      done = check_stop(r.stop(), r.output_token_ids(), r.num_tokens(), config_.max_model_len);
      if (done) break;
    }
    if (done) {
      outputs.push_back(finish(s.id, *done, std::move(new_tokens)));
      outputs.back().logprobs = std::move(logprobs);
      outputs.back().embedding = std::move(sampled->embedding);
      continue;
    }
    if (drafted) {  // every sample appended: the last token's and the confirmed drafts' K/V count
      r.set_num_computed_tokens(s.num_computed_tokens + static_cast<int64_t>(sampled->samples.size()));
      kv_.cache_computed_blocks(s.id, r.token_ids(), r.num_computed_tokens(), r.extra_keys());
    }
    RequestOutput out;
    out.id = s.id;
    out.new_token_ids = std::move(new_tokens);
    out.logprobs = std::move(logprobs);
    out.status = r.status();
    out.num_prompt_tokens = r.num_prompt_tokens();
    out.num_output_tokens = r.num_output_tokens();
    out.num_cached_tokens = r.num_cached_tokens();
    outputs.push_back(std::move(out));
  }
  return outputs;
}

bool Scheduler::fork_request(RequestId parent_id, RequestId child_id, RequestOptions options) {
  if (requests_.count(child_id) != 0) fail<InvalidArgument>("request id {} is already queued", child_id);
  const auto it = requests_.find(parent_id);
  if (it == requests_.end() || num_running() >= config_.max_num_seqs) return false;
  const Request& parent = it->second.request;
  const int64_t shared = parent.num_prompt_tokens() - 1;
  if (parent.status() != RequestStatus::kRunning || parent.num_computed_tokens() < shared) return false;
  std::vector<int32_t> prompt(parent.prompt_token_ids().begin(), parent.prompt_token_ids().end());
  if (!kv_.can_fork(parent_id, shared)) {  // the window moved past blocks the child would read
    add_request(Request(child_id, std::move(prompt), std::move(options)));
    return true;
  }
  Request child(child_id, std::move(prompt), std::move(options));
  validate(child);
  child.set_num_computed_tokens(shared);
  child.set_num_cached_tokens(shared);
  child.set_status(RequestStatus::kRunning);
  kv_.fork(parent_id, child_id, shared);
  requests_.emplace(child_id, Entry{std::move(child), 0, {}});
  running_.push_back(child_id);
  return true;
}

void Scheduler::fork_sequence(RequestId parent_id, RequestId child_id) {
  if (requests_.count(child_id) != 0) fail<InvalidArgument>("request id {} is already queued", child_id);
  const auto it = requests_.find(parent_id);
  if (it == requests_.end() || !it->second.request.is_beam())
    fail<InvalidArgument>("fork of sequence {}: no such beam sequence", parent_id);
  const Request& parent = it->second.request;
  Request child(child_id, {parent.prompt_token_ids().begin(), parent.prompt_token_ids().end()}, parent.options());
  child.reserve_tokens(std::min(parent.num_prompt_tokens() + parent.stop().max_tokens, config_.max_model_len));
  child.append_output_tokens(parent.output_token_ids());
  child.set_num_cached_tokens(parent.num_cached_tokens());
  const int64_t computed = parent.num_computed_tokens();
  if (parent.status() == RequestStatus::kRunning && num_running() < config_.max_num_seqs &&
      kv_.can_fork(parent_id, computed)) {
    kv_.fork(parent_id, child_id, computed);
    child.set_num_computed_tokens(computed);
    child.set_status(RequestStatus::kRunning);
    requests_.emplace(child_id, Entry{std::move(child), 0, {}});
    running_.push_back(child_id);
    return;
  }
  // No slot (or the parent is queued itself): recompute, ahead of new requests since its request runs.
  child.set_status(RequestStatus::kPreempted);
  requests_.emplace(child_id, Entry{std::move(child), 0, {}});
  enqueue_waiting(child_id, /*at_front=*/true);
}

void Scheduler::append_tokens(RequestId id, std::span<const int32_t> token_ids) {
  const auto it = requests_.find(id);
  if (it == requests_.end() || !it->second.request.is_beam())
    fail<InvalidArgument>("append to sequence {}: no such beam sequence", id);
  Request& r = it->second.request;
  if (r.num_tokens() + static_cast<int64_t>(token_ids.size()) > config_.max_model_len)
    fail<InvalidArgument>("append to sequence {}: {} + {} tokens exceed max_model_len {}", id, r.num_tokens(),
                          token_ids.size(), config_.max_model_len);
  r.append_output_tokens(token_ids);
}

bool Scheduler::release(RequestId id) {
  if (requests_.count(id) == 0) return false;
  finish(id, RequestStatus::kFinishedCancelled, {}, /*counted=*/false);
  return true;
}

std::optional<RequestOutput> Scheduler::abort(RequestId id, RequestStatus status) {
  if (!is_finished(status))
    fail<InvalidArgument>("abort of request {} with live status {}", id, to_string(status));
  if (requests_.count(id) == 0) return std::nullopt;
  return finish(id, status, {});
}

// The one cleanup path: every live request leaves through here exactly once.
RequestOutput Scheduler::finish(RequestId id, RequestStatus status, std::vector<int32_t> new_token_ids,
                                bool counted) {
  Request& r = entry(id).request;
  if (const auto it = std::find(running_.begin(), running_.end(), id); it != running_.end()) running_.erase(it);
  if (const auto it = std::find(waiting_.begin(), waiting_.end(), id); it != waiting_.end()) waiting_.erase(it);
  kv_.free(id);
  r.set_status(status);
  RequestOutput out;
  out.id = id;
  out.new_token_ids = std::move(new_token_ids);
  out.status = status;
  out.num_prompt_tokens = r.num_prompt_tokens();
  out.num_output_tokens = r.num_output_tokens();
  out.num_cached_tokens = r.num_cached_tokens();
  if (counted) {
    ++num_finished_;
    ++num_finished_by_status_[finished_index(status)];
  }
  requests_.erase(id);
  return out;
}

std::vector<RequestOutput> Scheduler::abort_expired(double now) {
  std::vector<RequestId> expired;
  for (const auto& [id, e] : requests_)
    if (e.request.deadline() > 0.0 && e.request.deadline() <= now) expired.push_back(id);
  std::sort(expired.begin(), expired.end());
  std::vector<RequestOutput> outputs;
  for (RequestId id : expired) outputs.push_back(finish(id, RequestStatus::kFinishedTimeout, {}));
  return outputs;
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.num_running = num_running();
  s.num_waiting = num_waiting();
  for (RequestId id : waiting_) s.num_swapped += kv_.is_swapped(id);
  s.kv_blocks_total = kv_.device_pool().num_blocks();
  s.kv_blocks_used = kv_.device_pool().num_used_blocks();
  s.kv_blocks_cached = kv_.prefix_cache().num_cached_blocks();
  s.host_blocks_total = kv_.host_pool().num_blocks();
  s.host_blocks_used = kv_.host_pool().num_used_blocks();
  s.prefix_cache_queries = prefix_.queries;
  s.prefix_cache_hits = prefix_.hits;
  s.prefix_cache_queried_tokens = prefix_.queried_tokens;
  s.prefix_cache_hit_tokens = prefix_.hit_tokens;
  s.num_preemptions = num_preemptions_;
  s.num_swap_outs = num_swap_outs_;
  s.num_swap_ins = num_swap_ins_;
  s.num_swap_fallbacks = num_swap_fallbacks_;
  s.num_blocks_dropped = num_blocks_dropped_;
  s.num_draft_tokens = num_draft_tokens_;
  s.num_accepted_draft_tokens = num_accepted_draft_tokens_;
  s.num_verifications_by_accepted = num_verifications_by_accepted_;
  s.num_steps = next_step_id_;
  s.num_finished = num_finished_by_status_;
  return s;
}

const Request* Scheduler::find(RequestId id) const {
  const auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second.request;
}

void Scheduler::check_invariants() const {
  kv_.check_invariants();
  if (num_running() > config_.max_num_seqs)
    throw std::logic_error(fmt::format("Scheduler: {} running > max_num_seqs {}", num_running(), config_.max_num_seqs));
  if (running_.size() + waiting_.size() != requests_.size())
    throw std::logic_error(fmt::format("Scheduler: {} running + {} waiting != {} live", running_.size(),
                                       waiting_.size(), requests_.size()));
  int32_t with_blocks = 0;
  for (RequestId id : running_) {
    const Request& r = requests_.at(id).request;
    if (r.status() != RequestStatus::kRunning || !kv_.contains(id) || kv_.is_swapped(id))
      throw std::logic_error(fmt::format("Scheduler: running request {} is {}", id, to_string(r.status())));
    if (kv_.num_table_blocks(id) < kv_.blocks_for(r.num_computed_tokens()))
      throw std::logic_error(fmt::format("Scheduler: request {} has too few blocks for its computed tokens", id));
    ++with_blocks;
  }
  for (RequestId id : waiting_) {
    const Request& r = requests_.at(id).request;
    if (r.status() == RequestStatus::kSwapped) {
      if (!kv_.is_swapped(id)) throw std::logic_error(fmt::format("Scheduler: swapped request {} has no host blocks", id));
      ++with_blocks;
    } else if (r.status() == RequestStatus::kWaiting || r.status() == RequestStatus::kPreempted) {
      if (kv_.contains(id) || r.num_computed_tokens() != 0)
        throw std::logic_error(fmt::format("Scheduler: waiting request {} holds blocks or computed tokens", id));
    } else {
      throw std::logic_error(fmt::format("Scheduler: waiting request {} is {}", id, to_string(r.status())));
    }
  }
  if (with_blocks != kv_.num_sequences())
    throw std::logic_error(fmt::format("Scheduler: {} requests hold blocks, KvManager has {} sequences", with_blocks,
                                       kv_.num_sequences()));
}

}  // namespace lemma
