#include "lemma/engine/beam_search.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace lemma {

double beam_score(double cum_logprob, int64_t length, float length_penalty) {
  return cum_logprob / std::pow(static_cast<double>(std::max<int64_t>(length, 1)), static_cast<double>(length_penalty));
}

BeamSearch::BeamSearch(const BeamSearchParams& params, int64_t max_length)
    : params_(params), max_length_(std::max<int64_t>(max_length, 1)), live_(1) {}

void BeamSearch::offer(BeamHypothesis h) {
  const auto width = static_cast<size_t>(params_.width);
  if (finished_.size() >= width && !(h.score > finished_.back().score)) return;
  // After the last hypothesis of equal or better score: the earlier one wins ties.
  const auto at = std::upper_bound(finished_.begin(), finished_.end(), h.score,
                                   [](double score, const BeamHypothesis& x) { return score > x.score; });
  finished_.insert(at, std::move(h));
  if (finished_.size() > width) finished_.pop_back();
}

bool BeamSearch::early_stop() const {
  if (finished_.size() < static_cast<size_t>(params_.width)) return false;
  if (params_.early_stopping == EarlyStopping::kWhenFull) return true;
  // live_ is in rank order, so live_[0] has the best cumulative log-probability.
  const double best = live_.front().cum_logprob;
  const auto length = static_cast<int64_t>(live_.front().tokens.size());
  // kHeuristic scores the best beam as if it ended now. kNever bounds what any continuation can
  // reach: log-probabilities only lower the sum, and the length term is most favourable at the
  // longest length when length_penalty > 0, at the current one otherwise.
  const int64_t bound_length =
      params_.early_stopping == EarlyStopping::kNever && params_.length_penalty > 0.0f ? max_length_ : length;
  return finished_.back().score >= beam_score(best, bound_length, params_.length_penalty);
}

std::vector<BeamContinuation> BeamSearch::step(std::span<const std::vector<TokenLogprob>> rows, const EndCheck& ends) {
  struct Candidate {
    double cum_logprob;
    int32_t beam;
    int32_t rank;  // in the beam's row
    TokenLogprob token;
  };
  std::vector<Candidate> candidates;
  for (size_t b = 0; b < live_.size() && b < rows.size(); ++b)
    for (size_t r = 0; r < rows[b].size(); ++r)
      candidates.push_back({live_[b].cum_logprob + static_cast<double>(rows[b][r].logprob), static_cast<int32_t>(b),
                            static_cast<int32_t>(r), rows[b][r]});
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tuple(-a.cum_logprob, a.beam, a.rank) < std::tuple(-b.cum_logprob, b.beam, b.rank);
  });

  const auto width = static_cast<size_t>(params_.width);
  std::vector<Live> next;
  std::vector<BeamContinuation> continuations;
  bool at_length_limit = false;
  std::vector<int32_t> tokens;
  for (size_t rank = 0; rank < candidates.size() && next.size() < width; ++rank) {
    const Candidate& c = candidates[rank];
    const Live& parent = live_[static_cast<size_t>(c.beam)];
    tokens.assign(parent.tokens.begin(), parent.tokens.end());
    tokens.push_back(c.token.token);
    const std::optional<RequestStatus> end = ends(tokens);
    Live beam{tokens, parent.token_logprobs, c.cum_logprob};
    beam.token_logprobs.push_back(c.token.logprob);
    if (end == RequestStatus::kFinishedStopped) {
      if (rank < width) {
        const double score = beam_score(c.cum_logprob, static_cast<int64_t>(tokens.size()), params_.length_penalty);
        offer({std::move(beam.tokens), std::move(beam.token_logprobs), c.cum_logprob, score, *end});
      }
      continue;
    }
    at_length_limit |= end.has_value();
    next.push_back(std::move(beam));
    continuations.push_back({c.beam, c.token.token});
  }
  live_ = std::move(next);
  if (live_.empty()) return {};
  if (early_stop()) {  // HF: live beams of a search that stopped early are not hypotheses
    live_.clear();
    return {};
  }
  if (at_length_limit) {  // every live beam has one length: all reached the limit
    for (Live& beam : live_) {
      const double score = beam_score(beam.cum_logprob, static_cast<int64_t>(beam.tokens.size()), params_.length_penalty);
      offer({std::move(beam.tokens), std::move(beam.token_logprobs), beam.cum_logprob, score,
             RequestStatus::kFinishedLength});
    }
    live_.clear();
    return {};
  }
  return continuations;
}

}  // namespace lemma
