// ModelRunner: executes one scheduled step on a Model. It keeps its own view of each request (tokens,
// block table, sampler), built only from StepPlans (sched/README.md's runner contract): performs the
// plan's swap and copy-on-write block copies, runs one forward over the ragged batch through the
// block tables, and samples a token for every scheduled request that reached its end (a beam-search
// sequence returns its row's best 2W continuations instead: SampledTokens::candidates).
// A request's draw at output position p depends only on (seed, p) (Sampler::seek), so recompute
// after preemption reproduces its samples. Owns the device KV cache, the host swap tier, the
// workspace and the logits buffer (sized once). Single-threaded: the engine thread owns it.
#pragma once

#include <cstdint>
#include <future>
#include <span>
#include <unordered_map>
#include <vector>

#include "lemma/grammar/token_constraint.h"
#include "lemma/model/model.h"
#include "lemma/sampling/sampler.h"
#include "lemma/model/moe/moe_step_stats.h"
#include "lemma/sampling/speculative_sampling.h"
#include "lemma/sched/step_plan.h"

namespace lemma {

struct ModelRunnerConfig {
  int64_t num_device_blocks = 0;
  int64_t num_host_blocks = 0;  // swap tier; 0: none
  int64_t block_size = 16;
  int64_t max_num_seqs = 64;    // logits rows reserved up front
  int num_threads = 1;          // threads per forward (results do not depend on it)
  uint64_t default_seed = 0;    // for requests whose SamplingParams carry no seed
  KvDtype kv_dtype = KvDtype::kF32;  // device and host caches (G23)
};

struct RunnerOutput {
  StepResult result;                   // each sampled token with its logprob details
  int64_t num_sequences = 0;           // sequences in the forward
  int64_t num_tokens = 0;              // tokens in the forward
  moe::MoeStepStats moe;               // routing statistics of a MoE model's forward (G27); empty otherwise
};

class ModelRunner {
 public:
  // Throws InvalidArgument for impossible sizes.
  ModelRunner(const Model& model, const ModelRunnerConfig& config);
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // Runs `plan`. Throws (InvalidArgument, Error) when the plan disagrees with the runner's state or
  // the forward fails; the caller then fails the plan's requests (and forgets them).
  RunnerOutput run(const StepPlan& plan);

  // Drops a finished request's state (idempotent). The one way a finished request leaves the runner:
  // plans name only preemptions, and the engine, which sees every finish, calls this for each.
  void forget(RequestId id) { state_.erase(id); }

  // Optional: a copy of the last-token logits of each sampled request (tests of batch invariance).
  void set_keep_logits(bool keep) { keep_logits_ = keep; }
  std::span<const float> last_logits(RequestId id) const;

  size_t num_tracked() const { return state_.size(); }
  const KvCache& device_cache() const { return device_; }
  // Prefill/decode disaggregation (G24): device blocks `blocks` copied into a cache of their own
  // (its block i holds blocks[i]), and such a cache copied back into device blocks (dst[i] < 0:
  // skipped). The layouts must match (same model and KV dtype); InvalidArgument otherwise.
  KvCache export_blocks(std::span<const int32_t> blocks);
  void import_blocks(KvCache& from, std::span<const int32_t> dst);
  const Model& model() const { return model_; }

 private:
  struct State {
    std::vector<int32_t> tokens;  // prompt, then outputs
    int64_t num_prompt_tokens = 0;
    std::vector<int32_t> block_table;
    Sampler sampler;
    // Structured output: the grammar's state after the outputs so far (null: unconstrained).
    std::unique_ptr<grammar::ConstraintState> constraint;
    StreamingWindow streaming = {};  // attention sinks (G10)
    std::shared_ptr<const LoraAdapter> lora = {};  // its LoRA adapter (G29), or null
    Pooling pooling = Pooling::kNone;                // an embedding request (sched/pooling.h)
    std::vector<double> pooled_sum = {};             // kMean: the sum of the prompt rows so far
    int64_t pooled_rows = 0;                         // positions [0, pooled_rows) are in it
  };
  void apply_plan_state(const StepPlan& plan);
  // Starts computing the grammar mask of each constrained sequence's first sampled position on a
  // thread of its own (the forward runs meanwhile); an invalid future when there is none.
  std::future<void> start_first_masks(const StepPlan& plan);
  void copy_blocks(const StepPlan& plan);
  // One token per sequence that needs one, the sequences split over the forward's team (each has
  // its own Sampler, so which thread samples a row never changes the token).
  void sample(const StepPlan& plan, RunnerOutput& out);
  // Pooling requests: their rows of the forward's final hidden states (the final norm's output,
  // ForwardWorkspace::normed) pooled; the sampled entry of a request whose prompt ends this step
  // gets the vector (SampledTokens::embedding).
  void pool(const StepPlan& plan, RunnerOutput& out);
  // Moves each draft tree's accepted drafts' K/V from their tree slots to the slots after the last
  // token, where the next step's chain expects them (copy_kv_slots).
  void compact_accepted_trees();
  void sample_sequence(size_t i, size_t vocab);
  static std::span<const float> constrained(State& st, std::span<const float> logits, std::vector<float>& out);

  const Model& model_;
  ModelRunnerConfig config_;
  KvCache device_;
  KvCache host_;
  ForwardWorkspace workspace_;
  std::vector<float> logits_;
  ForwardBatch batch_;
  std::unordered_map<RequestId, State> state_;
  // This step's sequences that sample, in logits-row order: the state, the first logits row, the
  // drafts to verify (empty: one row, one sample) and, for a draft tree, their parents. Row
  // first_row + 1 + d holds draft d's logits (chain or tree), first_row the last token's.
  struct SampledSequence {
    State* state = nullptr;
    size_t first_row = 0;
    std::span<const int32_t> drafts;
    const std::vector<float>* draft_probs = nullptr;  // [drafts, vocab] when drawn at random
    std::span<const int32_t> draft_parents;           // empty: a chain
    int64_t num_cached = 0;                           // the last token's position
  };
  std::vector<SampledSequence> sampled_;
  std::vector<std::vector<SampleResult>> samples_;  // their results: one, or 1 + accepted drafts
  std::vector<std::vector<int32_t>> verified_outputs_;  // per sequence: outputs + confirmed drafts (reused)
  std::vector<std::vector<int32_t>> accepted_drafts_;   // per sequence: the confirmed drafts' indices, in order
  std::vector<int32_t> tree_parents_;  // the forward's tree for sequences with a draft tree (as draft_inputs_)
  std::vector<int64_t> moved_from_, moved_to_;  // compact_accepted_trees' positions (reused)
  std::vector<int32_t> draft_inputs_;  // the forward's input for drafted sequences: last token, drafts
  std::vector<std::vector<float>> masked_logits_;  // per sequence: a constrained row with refused tokens at -inf
  std::vector<std::vector<float>> target_probs_;   // per sequence: the target's distribution (rejection sampling)
  // Per sequence: the children of the node being verified (stochastic drafts), their tokens, their
  // acceptance uniforms, and verify_candidates' rows.
  struct CandidateRows {
    std::vector<int32_t> children, tokens;
    std::vector<double> uniforms;
    CandidateScratch scratch;
  };
  std::vector<CandidateRows> candidate_rows_;
  std::vector<std::vector<TokenLogprob>> candidates_;  // per beam-search sequence: its best 2W continuations
  std::vector<grammar::ConstraintState*> mask_states_;  // start_first_masks' sequences
  std::vector<SamplerScratch> sampler_scratch_;  // one per row, kept across requests
  bool keep_logits_ = false;
  std::unordered_map<RequestId, std::vector<float>> kept_logits_;
};

}  // namespace lemma
