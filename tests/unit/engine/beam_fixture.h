// Helpers for beam-search tests: a driver that collects each beam request's final hypotheses (one
// output per choice) and a BeamSearchParams builder.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "unit/engine/engine_fixture.h"

namespace lemma::testing {

struct Hypothesis {
  std::vector<int32_t> tokens;
  double cum_logprob = 0.0;
  double score = 0.0;
  RequestStatus status = RequestStatus::kRunning;
  int finish_count = 0;
};

// Request id -> its choices, indexed by choice (one final output each).
using BeamResults = std::map<RequestId, std::vector<Hypothesis>>;

// Adds a step's outputs: those of the requests in `beam_ids` as hypotheses, the others to `others`.
inline void collect_beams(const StepReport& report, const Engine& engine, const std::set<RequestId>& beam_ids,
                          BeamResults& seen, std::map<RequestId, Finished>& others) {
  for (const auto& o : report.outputs) {
    const RequestId request = o.output.id - static_cast<RequestId>(o.choice);
    if (beam_ids.count(request) == 0) {
      StepReport one;
      one.outputs.push_back(o);
      collect(one, engine, others);
      continue;
    }
    auto& choices = seen[request];
    if (choices.size() <= static_cast<size_t>(o.choice)) choices.resize(static_cast<size_t>(o.choice) + 1);
    Hypothesis& h = choices[static_cast<size_t>(o.choice)];
    h.tokens.insert(h.tokens.end(), o.output.new_token_ids.begin(), o.output.new_token_ids.end());
    if (o.beam) {
      h.cum_logprob = o.beam->cumulative_logprob;
      h.score = o.beam->score;
    }
    if (o.output.finished()) {
      h.status = o.output.status;
      ++h.finish_count;
    }
  }
}

// Steps until nothing is left (max_steps guards against a hang).
inline BeamResults run_beams(Engine& engine, const std::set<RequestId>& beam_ids,
                             std::map<RequestId, Finished>* others = nullptr, int max_steps = 20000) {
  BeamResults seen;
  std::map<RequestId, Finished> ignored;
  for (int i = 0; i < max_steps && engine.has_unfinished_requests(); ++i)
    collect_beams(engine.step(), engine, beam_ids, seen, others != nullptr ? *others : ignored);
  EXPECT_FALSE(engine.has_unfinished_requests()) << "the engine did not finish within " << max_steps << " steps";
  return seen;
}

inline RequestOptions beam_options(int32_t width, int64_t max_tokens, float length_penalty = 1.0f,
                                   EarlyStopping early_stopping = EarlyStopping::kHeuristic) {
  RequestOptions o;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  o.sampling.beam_search = BeamSearchParams{width, length_penalty, early_stopping};
  return o;
}

}  // namespace lemma::testing
