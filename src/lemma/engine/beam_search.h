// BeamSearch (G12): the bookkeeping of one beam-search request, free of sequences and KV blocks —
// its live beams (tokens, cumulative log-probability), its finished hypotheses, the rule that keeps
// the best W continuations each step, and when the search is over (HF's BeamSearchScorer semantics,
// lengths counted in generated tokens). The engine maps each live beam onto a scheduler sequence
// (engine_beams.cpp). Plain value; deterministic; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "lemma/sampling/logit_ops.h"
#include "lemma/sampling/sampling_params.h"
#include "lemma/sched/request_status.h"

namespace lemma {

// A finished hypothesis' score: cum_logprob / length^length_penalty (length: generated tokens, the
// ending EOS or stop token included). Higher is better.
double beam_score(double cum_logprob, int64_t length, float length_penalty);

struct BeamHypothesis {
  std::vector<int32_t> tokens;        // generated tokens, the ending one included
  std::vector<float> token_logprobs;  // parallel to tokens: each one's log-probability when chosen
  double cum_logprob = 0.0;           // their sum
  double score = 0.0;                 // beam_score(cum_logprob, tokens.size(), length_penalty)
  RequestStatus status = RequestStatus::kFinishedLength;  // kFinishedStopped (EOS, stop token) or length
};

// Live beam i after a step continues beam `parent` (its index before the step) with `token`.
struct BeamContinuation {
  int32_t parent = 0;
  int32_t token = 0;
};

class BeamSearch {
 public:
  // Why a beam ends once it has generated `tokens` (the last one just chosen): kFinishedStopped
  // (EOS, a stop token), kFinishedLength (max_tokens, the context), or nullopt to go on.
  using EndCheck = std::function<std::optional<RequestStatus>(std::span<const int32_t> tokens)>;

  // One live beam with no tokens. max_length: the most tokens a hypothesis can generate (the bound
  // EarlyStopping::kNever needs).
  BeamSearch(const BeamSearchParams& params, int64_t max_length);

  // One step. rows[b]: live beam b's best continuations, most likely first (Sampler::top_candidates,
  // 2W of them). Every (beam, candidate) pair is ranked by cumulative log-probability, ties by lower
  // beam index then rank in its row. Walking that order: a continuation that ends by EOS or a stop
  // token becomes a finished hypothesis if it ranks among the first W (else it is dropped, as HF);
  // any other becomes a live beam, until W are live. Then the search is over when no beam is live,
  // when the early-stopping rule says so (live beams dropped), or when the live beams reached their
  // length limit (they become finished hypotheses). Returns the new live beams in rank order;
  // empty once the search is over.
  std::vector<BeamContinuation> step(std::span<const std::vector<TokenLogprob>> rows, const EndCheck& ends);

  bool is_over() const { return live_.empty(); }
  int32_t num_live() const { return static_cast<int32_t>(live_.size()); }
  std::span<const int32_t> tokens(int32_t beam) const { return live_.at(static_cast<size_t>(beam)).tokens; }
  // The kept hypotheses (at most W), best first; ties keep the one finished first.
  const std::vector<BeamHypothesis>& finished() const { return finished_; }
  const BeamSearchParams& params() const { return params_; }

 private:
  struct Live {
    std::vector<int32_t> tokens;
    std::vector<float> token_logprobs;
    double cum_logprob = 0.0;
  };
  // Offers a hypothesis to the kept W (HF: taken while fewer than W, else only if it beats the worst).
  void offer(BeamHypothesis h);
  // HF's is_done over the live beams (all of one length) after a step.
  bool early_stop() const;

  BeamSearchParams params_;
  int64_t max_length_;
  std::vector<Live> live_;
  std::vector<BeamHypothesis> finished_;
};

}  // namespace lemma
