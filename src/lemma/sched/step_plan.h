// StepPlan / StepResult / RequestOutput: the plain data between the Scheduler and the model runner
// (vLLM v1's SchedulerOutput shape). A plan names new requests in full and known ones as a diff, the
// tokens granted to each, block copies to perform before the forward, and the requests it preempted.
// Finished requests are not in it: the engine, which sees every finish, drops them from the runner.
// Plain copyable structs; no behaviour beyond small helpers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lemma/kv/kv_manager.h"
#include "lemma/sampling/sampler.h"
#include "lemma/sampling/sampling_params.h"
#include "lemma/sched/request.h"

namespace lemma {

// A request the runner has no state for: admitted for the first time, or resumed after preemption.
struct NewRequestData {
  RequestId id = 0;
  bool first_scheduled = true;        // never scheduled before (false: resumed after preemption)
  std::vector<int32_t> token_ids;     // every token known: prompt, then outputs (when resumed)
  int64_t num_prompt_tokens = 0;
  int64_t num_computed_tokens = 0;    // tokens whose K/V is in the cache already (prefix hit, swap)
  std::vector<BlockId> block_table;   // device blocks covering the tokens granted this step
  SamplingParams sampling;
  StreamingWindow streaming = {};     // attention sinks (G10): what its forwards attend
  std::shared_ptr<const LoraAdapter> lora = {};  // its adapter (G29), or null
  Pooling pooling = Pooling::kNone;   // an embedding request (sched/pooling.h)
};

// A block table entry that now points to a fresh copy (copy-on-write; the copy is in StepPlan::copies),
// or to kNoBlock: dropped, its positions lie wholly before the sliding window and are never read again.
struct BlockReplacement {
  int32_t index = 0;
  BlockId block = -1;
};

// A request the runner already holds: what changed since the last plan that named it.
struct CachedRequestData {
  RequestId id = 0;
  std::vector<int32_t> new_token_ids;        // tokens appended since the runner last saw this request
  std::vector<BlockId> new_block_ids;        // appended to its block table
  std::vector<BlockReplacement> replaced_blocks;
  int64_t num_computed_tokens = 0;
};

// Tokens [num_computed_tokens, num_computed_tokens + num_new_tokens) of request `id` run this step.
// With drafts (speculative decoding), the granted tokens are the request's last token followed by
// draft_token_ids (num_new_tokens = 1 + drafts): the runner samples at each of those positions in
// turn while the sampled token equals the next draft, so the request gains 1 + (accepted drafts)
// tokens, exactly those plain decoding would have sampled. Drafts that come with their draft
// distribution are kept by rejection sampling instead (same output distribution, other draws).
// With draft_parents the drafts form a tree under the last token (tree speculation, G12): all are
// verified in one forward, the runner follows at each node the child drafting its sample, moves the
// accepted drafts' K/V to the slots after the last token, and the request gains 1 + (accepted
// drafts) tokens as with a chain.
struct ScheduledRequest {
  RequestId id = 0;
  int64_t num_computed_tokens = 0;
  int64_t num_new_tokens = 0;
  bool needs_sample = false;  // the granted tokens reach the end: sample the next token
  std::vector<int32_t> draft_token_ids = {};
  // The draft's distribution per draft ([drafts, vocab]) when it drew them at random: the runner then
  // keeps each by exact rejection sampling (sampling/speculative_sampling.h). Null: point masses.
  std::shared_ptr<const std::vector<float>> draft_probs = {};
  // Empty: the drafts are a chain. Else one per draft, its parent draft or -1 (sched/draft_tree.h).
  // With draft_probs (a stochastic tree), the children of a node were drawn without replacement, in
  // index order, from the row they carry, and are verified together (recursive rejection sampling).
  std::vector<int32_t> draft_parents = {};
};

struct StepPlan {
  uint64_t step_id = 0;
  std::vector<NewRequestData> new_requests;
  std::vector<CachedRequestData> cached_requests;
  std::vector<ScheduledRequest> scheduled;  // the batch, in order; sum of num_new_tokens <= budget
  int64_t num_batched_tokens = 0;
  // Performed in this order before the forward: swap_out (device -> host), swap_in (host -> device),
  // copies (device -> device, copy-on-write).
  std::vector<BlockCopy> swap_out;
  std::vector<BlockCopy> swap_in;
  std::vector<BlockCopy> copies;
  std::vector<RequestId> preempted_ids;  // the runner drops their state; they come back as new requests

  bool has_work() const { return !scheduled.empty(); }
};

// The runner's answer: the token(s) sampled for each scheduled request with needs_sample, each with
// its logprob details (SampleResult::logprob and top are filled when the request asked for logprobs).
// A beam-search sequence (SamplingParams::beam_search) samples nothing: it returns its row's best
// 2W continuations (Sampler::top_candidates) for the engine to choose from.
struct SampledTokens {
  RequestId id = 0;
  std::vector<SampleResult> samples;
  std::vector<TokenLogprob> candidates = {};  // beam search only: most likely first
  // A pooling request's pooled final hidden state ([hidden], unnormalised), with its one sample;
  // empty when the runner could not pool every prompt row (its state was lost to a swap preemption).
  std::vector<float> embedding = {};
};

struct StepResult {
  std::vector<SampledTokens> sampled;
};

// What update() / abort() tell the engine about one request.
struct RequestOutput {
  RequestId id = 0;
  std::vector<int32_t> new_token_ids;
  std::vector<SampleResult> logprobs;  // parallel to new_token_ids when the request asked for logprobs
  RequestStatus status = RequestStatus::kRunning;
  int64_t num_prompt_tokens = 0;
  int64_t num_output_tokens = 0;
  int64_t num_cached_tokens = 0;
  std::vector<float> embedding;  // a pooling request's final output: SampledTokens::embedding

  bool finished() const { return is_finished(status); }
};

}  // namespace lemma
