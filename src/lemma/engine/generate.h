// generate(): one request through the Engine — the path of `lemma generate` and `lemma chat`, as
// vLLM's offline LLM runs over its engine, so there is one generation loop in the tree. Sizes the
// KV cache for prompt + max_tokens and prefills the prompt in one step; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "lemma/model/model.h"
#include "lemma/sampling/sampling_params.h"
#include "lemma/sched/request_status.h"
#include "lemma/sched/scheduler.h"
#include "lemma/spec/speculative_options.h"

namespace lemma {

// The KV block size generate() uses (flags given in tokens convert with it).
inline constexpr int32_t kGenerationBlockSize = 16;

struct GenerationOptions {
  int64_t max_tokens = 128;
  SamplingParams sampling;
  uint64_t default_seed = 0;            // used when sampling.seed is unset
  bool ignore_eos = false;              // keep going after the model's EOS token
  std::vector<int32_t> stop_token_ids;  // extra ids that end generation (included in the output)
  int num_threads = 1;                  // threads per forward (results do not depend on it)
  KvDtype kv_dtype = KvDtype::kF32;     // KV cache element type (G23)
  spec::SpeculativeOptions speculative;  // drafts verified in the forward (fewer steps, same outputs)
  // Attention sinks (G10): the first S tokens plus the last W; the KV cache then holds only
  // StreamingWindow::max_live_blocks blocks and the prompt is prefilled W tokens per step, so
  // prompt + max_tokens may pass the model's context. Not with speculation or beam search.
  StreamingWindow streaming = {};
  std::shared_ptr<const LoraAdapter> lora = {};  // the LoRA adapter to run on (G29), or null
};

struct GenerationTimings {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_ms = 0.0;  // prompt forward + first sample
  double decode_ms = 0.0;   // every later token
  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;  // over generated_tokens - 1 steps
};

// Beam search: one of the search's final hypotheses.
struct GeneratedHypothesis {
  std::vector<int32_t> ids;
  RequestStatus status = RequestStatus::kFinishedLength;
  double cumulative_logprob = 0.0;  // sum of its tokens' log-probabilities
  double score = 0.0;               // cumulative_logprob / len^length_penalty: what ranks them
};

struct GenerationResult {
  std::vector<int32_t> ids;  // generated ids only (beam search: the best hypothesis')
  // kFinishedLength, kFinishedStopped, or kFinishedCancelled when the callback said stop;
  // finish_reason(status) names it as OpenAI does.
  RequestStatus status = RequestStatus::kFinishedLength;
  GenerationTimings timings;
  // Beam search (sampling.beam_search): every hypothesis kept (up to the width), best first; ids and
  // status are the first's. Empty otherwise.
  std::vector<GeneratedHypothesis> beams;
};

// Called with each new token as soon as it is sampled (beam search: the best hypothesis' tokens,
// once the search is over); return false to stop.
using TokenCallback = std::function<bool(int32_t token)>;

// Throws InvalidArgument for an empty prompt, ids outside the vocabulary, invalid sampling
// parameters, or a prompt + max_tokens beyond the model's context length (without attention sinks;
// with them: S + W beyond it, or speculation / beams asked for too).
GenerationResult generate(const Model& model, std::span<const int32_t> prompt, const GenerationOptions& options,
                          const TokenCallback& on_token = {});

}  // namespace lemma
