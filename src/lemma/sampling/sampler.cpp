#include "lemma/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lemma/base/error.h"
#include "lemma/kernels/vocab_ops.h"
#include "lemma/sampling/vocab_passes.h"

namespace lemma {


Sampler::Sampler(SamplingParams params, uint64_t default_seed, kernels::Isa isa)
    : params_(std::move(params)), isa_(isa), seed_(params_.seed.value_or(default_seed)), rng_(seed_) {}

void Sampler::seek(uint64_t position) {
  // Rng's constructor runs splitmix64 over the mixed value, so nearby positions give unrelated streams.
  rng_ = Rng(seed_ ^ ((position + 1) * 0xD1B54A32D192ED03ull));
}

void SamplerScratch::ensure(size_t vocab) {
  if (work.size() == vocab) return;
  work.assign(vocab, 0.0f);
  weights.assign(vocab, 0.0f);
  block_sums.assign(weight_blocks(vocab), 0.0);
  values.assign(vocab, 0.0f);
  ids.assign(vocab, 0);
  positions.assign(vocab, 0);
  counts.assign(vocab, 0);
  flags.assign(vocab, 0);
}

SampleResult Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                             std::span<const int32_t> output_tokens) {
  if (!own_scratch_) own_scratch_ = std::make_unique<SamplerScratch>();
  return sample(logits, prompt_tokens, output_tokens, *own_scratch_);
}

int64_t Sampler::process(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                         std::span<const int32_t> output_tokens, SamplerScratch& s) const {
  s.ensure(logits.size());
  std::span<float> work = std::span<float>(s.work).first(logits.size());
  const int64_t nan_count = lemma::copy_masking_nan(logits, work, isa_);
  apply_logit_bias(work, params_.logit_bias);
  if (params_.repetition_penalty != 1.0f) {
    apply_repetition_penalty(work, prompt_tokens, output_tokens, params_.repetition_penalty, s.flags);
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    apply_presence_frequency(work, output_tokens, params_.presence_penalty, params_.frequency_penalty, s.counts);
  }
  return nan_count;
}

std::span<float> Sampler::tempered(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                                   std::span<const int32_t> output_tokens, SamplerScratch& s, int64_t& nan_count) const {
  nan_count = process(logits, prompt_tokens, output_tokens, s);
  std::span<float> work = std::span<float>(s.work).first(logits.size());
  if (!params_.is_greedy() && params_.temperature != 1.0f) apply_temperature(work, params_.temperature, isa_);  // x / 1 is x
  return work;
}

SampleResult Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                             std::span<const int32_t> output_tokens, SamplerScratch& scratch) {
  int64_t nan_count = 0;
  const std::span<float> work = tempered(logits, prompt_tokens, output_tokens, scratch, nan_count);
  const int32_t token = params_.is_greedy() ? argmax(work, isa_) : sample_tempered(work, scratch);
  SampleResult result = describe(logits, token, scratch);
  result.nan_count = nan_count;
  return result;
}

SampleResult Sampler::describe(std::span<const float> logits, int32_t token, SamplerScratch& s) const {
  s.ensure(logits.size());
  SampleResult result;
  result.token = token;
  // Raw logprobs: reuse `work` for log_softmax of the unprocessed logits.
  result.logprob = std::numeric_limits<float>::quiet_NaN();
  if (params_.logprobs) {
    result.logprob = -std::numeric_limits<float>::infinity();
    if (token != kNoToken) {
      std::span<float> work = std::span<float>(s.work).first(logits.size());
      log_softmax(logits, work);
      result.logprob = work[static_cast<size_t>(token)];
    }
  }
  if (params_.logprobs && params_.top_logprobs > 0) {
    result.top.resize(std::min(static_cast<size_t>(params_.top_logprobs), logits.size()));
    top_logprobs(logits, result.top, s.ids);
  }
  return result;
}

void Sampler::distribution(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                           std::span<const int32_t> output_tokens, SamplerScratch& s, std::span<float> probs) {
  if (probs.size() != logits.size())
    fail<InvalidArgument>("Sampler::distribution: {} probabilities for {} logits", probs.size(), logits.size());
  int64_t nan_count = 0;
  const std::span<float> work = tempered(logits, prompt_tokens, output_tokens, s, nan_count);
  std::fill(probs.begin(), probs.end(), 0.0f);
  if (params_.is_greedy()) {
    const int32_t token = argmax(work, isa_);
    if (token != kNoToken) probs[static_cast<size_t>(token)] = 1.0f;
    return;
  }
  const float max = max_value(work, isa_);
  if (max == -std::numeric_limits<float>::infinity()) return;
  // The same candidates and weights the draw uses (sample_tempered), normalised.
  const size_t count = select_candidates(work, max, s);
  const double total = candidate_weights(work, max, count, s);
  if (!(total > 0.0)) return;
  const bool all = count == work.size();
  for (size_t i = 0; i < count; ++i)
    probs[all ? i : static_cast<size_t>(s.ids[i])] = static_cast<float>(s.weights[i] / total);
}

size_t Sampler::top_candidates(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                               std::span<const int32_t> output_tokens, SamplerScratch& s,
                               std::span<TokenLogprob> out) const {
  process(logits, prompt_tokens, output_tokens, s);
  const auto work = std::span<const float>(s.work).first(logits.size());
  // Ranked by the processed logit (ties: lower id), so the order within a row is the greedy one.
  const auto n = static_cast<size_t>(top_logprobs(work, out, s.ids));
  size_t finite = 0;  // the ranking puts -inf (masked, refused by the grammar) last: cut there
  while (finite < n && out[finite].logprob != -std::numeric_limits<float>::infinity()) ++finite;
  return finite;
}

int32_t Sampler::sample_tempered(std::span<const float> logits, SamplerScratch& s) {
  const float max = max_value(logits, isa_);
  if (max == -std::numeric_limits<float>::infinity()) return kNoToken;
  const bool filtered = params_.min_p > 0.0f || (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < logits.size()) ||
                        params_.top_p < 1.0f;
  if (!filtered) {  // every finite token is a candidate: weights over the row itself, no id list
    const double total = exp_weights(logits, max, s.weights, s.block_sums, isa_);
    return static_cast<int32_t>(inverse_cdf(std::span<const float>(s.weights).first(logits.size()), s.block_sums,
                                            rng_.next_double() * total));
  }
  const size_t count = select_candidates(logits, max, s);
  return draw(logits, max, count, s);
}

double Sampler::candidate_weights(std::span<const float> logits, float max, size_t count, SamplerScratch& s) {
  if (count == logits.size()) return exp_weights(logits, max, s.weights, s.block_sums, isa_);  // ids are 0, 1, ...
  for (size_t i = 0; i < count; ++i) s.weights[i] = logits[static_cast<size_t>(s.ids[i])];
  return exp_weights(std::span<const float>(s.weights).first(count), max, s.weights, s.block_sums, isa_);
}

size_t Sampler::select_candidates(std::span<const float> logits, float max, SamplerScratch& s) {
  // Finite tokens, in id order; min_p keeps p_i >= min_p * p_max  <=>  l_i - l_max >= log(min_p).
  const float threshold = params_.min_p > 0.0f ? min_p_cutoff(max, std::log(static_cast<double>(params_.min_p)))
                                               : -std::numeric_limits<float>::infinity();
  auto count = static_cast<size_t>(kernels::select_at_least(logits, threshold, s.ids, isa_));
  // (logit desc, id asc) is a strict total order, so the top-k set and the nucleus are the same
  // everywhere. Candidates are kept as positions into s.ids, which is in id order; their logits
  // are gathered into s.values (unless every token is a candidate: then they are `logits`).
  const auto candidate_logits = [&]() -> std::span<const float> {
    if (count == logits.size()) return logits;
    for (size_t i = 0; i < count; ++i) s.values[i] = logits[static_cast<size_t>(s.ids[i])];
    return std::span<const float>(s.values).first(count);
  };
  const auto keep_positions = [&](size_t kept) {  // s.ids = the ids at s.positions[0 .. kept), in id order
    std::sort(s.positions.begin(), s.positions.begin() + static_cast<std::ptrdiff_t>(kept));
    for (size_t i = 0; i < kept; ++i) s.ids[i] = s.ids[static_cast<size_t>(s.positions[i])];
    return kept;
  };
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < count) {
    best_positions(candidate_logits(), static_cast<size_t>(params_.top_k), s.positions, isa_);
    count = keep_positions(static_cast<size_t>(params_.top_k));
  }
  if (params_.top_p < 1.0f && count > 1) {
    // Smallest most-likely prefix whose mass reaches top_p: rank a growing head, not every candidate.
    const double target = static_cast<double>(params_.top_p) * candidate_weights(logits, max, count, s);
    const std::span<const float> values = candidate_logits();
    const auto by_rank = [&](int32_t a, int32_t b) {
      const float va = values[static_cast<size_t>(a)], vb = values[static_cast<size_t>(b)];
      return va != vb ? va > vb : a < b;
    };
    for (size_t head = std::min<size_t>(count, 64);; head = std::min(count, head * 4)) {
      best_positions(values, head, s.positions, isa_);
      std::sort(s.positions.begin(), s.positions.begin() + static_cast<std::ptrdiff_t>(head), by_rank);
      double cumulative = 0.0;
      size_t keep = 0;
      while (keep < head && cumulative < target) cumulative += s.weights[static_cast<size_t>(s.positions[keep++])];
      if (cumulative >= target || head == count) {
        count = keep_positions(std::max<size_t>(keep, 1));
        break;
      }
    }
  }
  return count;
}

int32_t Sampler::draw(std::span<const float> logits, float max, size_t count, SamplerScratch& s) {
  if (count == 0) return kNoToken;
  // Draw in id order so the token a given random number maps to does not depend on the ranking.
  const double total = candidate_weights(logits, max, count, s);
  const size_t at = inverse_cdf(std::span<const float>(s.weights).first(count), s.block_sums, rng_.next_double() * total);
  return s.ids[at];
}

}  // namespace lemma
