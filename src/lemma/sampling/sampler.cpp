#include "lemma/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lemma {

Sampler::Sampler(SamplingParams params, uint64_t default_seed)
    : params_(std::move(params)), seed_(params_.seed.value_or(default_seed)), rng_(seed_) {}

void Sampler::seek(uint64_t position) {
  // Rng's constructor runs splitmix64 over the mixed value, so nearby positions give unrelated streams.
  rng_ = Rng(seed_ ^ ((position + 1) * 0xD1B54A32D192ED03ull));
}

void Sampler::ensure_scratch(size_t vocab) {
  if (work_.size() == vocab) return;
  work_.assign(vocab, 0.0f);
  ids_.assign(vocab, 0);
  counts_.assign(vocab, 0);
  flags_.assign(vocab, 0);
  weights_.assign(vocab, 0.0);
}

SampleResult Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                             std::span<const int32_t> output_tokens) {
  ensure_scratch(logits.size());
  SampleResult result;
  std::span<float> work(work_);
  std::copy(logits.begin(), logits.end(), work.begin());
  result.nan_count = mask_nan(work);

  apply_logit_bias(work, params_.logit_bias);
  if (params_.repetition_penalty != 1.0f) {
    apply_repetition_penalty(work, prompt_tokens, output_tokens, params_.repetition_penalty, flags_);
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    apply_presence_frequency(work, output_tokens, params_.presence_penalty, params_.frequency_penalty, counts_);
  }

  if (params_.is_greedy()) {
    result.token = argmax(work);
  } else {
    apply_temperature(work, params_.temperature);
    const size_t count = select_candidates(work);
    result.token = count == 0 ? kNoToken : draw(work, count);
  }

  // Raw logprobs: reuse `work` for log_softmax of the unprocessed logits.
  result.logprob = std::numeric_limits<float>::quiet_NaN();
  if (params_.logprobs) {
    result.logprob = -std::numeric_limits<float>::infinity();
    if (result.token != kNoToken) {
      log_softmax(logits, work);
      result.logprob = work[static_cast<size_t>(result.token)];
    }
  }
  if (params_.logprobs && params_.top_logprobs > 0) {
    result.top.resize(std::min(static_cast<size_t>(params_.top_logprobs), logits.size()));
    top_logprobs(logits, result.top, ids_);
  }
  return result;
}

size_t Sampler::select_candidates(std::span<const float> logits) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float max = kNegInf;
  size_t count = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > kNegInf) {
      ids_[count++] = static_cast<int32_t>(i);
      max = std::max(max, logits[i]);
    }
  }
  if (count == 0) return 0;
  const auto begin = ids_.begin();
  auto end = [&] { return begin + static_cast<std::ptrdiff_t>(count); };
  if (params_.min_p > 0.0f) {  // p_i >= min_p * p_max  <=>  l_i - l_max >= log(min_p)
    const double threshold = std::log(static_cast<double>(params_.min_p));
    count = static_cast<size_t>(std::remove_if(begin, end(), [&](int32_t t) {
                                  return logits[static_cast<size_t>(t)] - static_cast<double>(max) < threshold;
                                }) - begin);
  }
  // (logit desc, id asc) is a strict total order, so the top-k *set* is the same everywhere.
  auto by_logit = [&](int32_t a, int32_t b) {
    const float va = logits[static_cast<size_t>(a)], vb = logits[static_cast<size_t>(b)];
    return va != vb ? va > vb : a < b;
  };
  bool reordered = false;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < count) {
    std::nth_element(begin, begin + params_.top_k, end(), by_logit);
    count = static_cast<size_t>(params_.top_k);
    reordered = true;
  }
  if (params_.top_p < 1.0f && count > 1) {
    // Smallest most-likely prefix whose mass reaches top_p: sort a growing head, not the vocabulary.
    double total = 0.0;
    for (size_t i = 0; i < count; ++i) total += std::exp(static_cast<double>(logits[static_cast<size_t>(ids_[i])]) - max);
    const double target = static_cast<double>(params_.top_p) * total;
    size_t head = std::min<size_t>(count, 64);
    for (;;) {
      std::partial_sort(begin, begin + static_cast<std::ptrdiff_t>(head), end(), by_logit);
      double cumulative = 0.0;
      size_t keep = 0;
      while (keep < head && cumulative < target) {
        cumulative += std::exp(static_cast<double>(logits[static_cast<size_t>(ids_[keep])]) - max);
        ++keep;
      }
      if (cumulative >= target || head == count) {
        count = std::max<size_t>(keep, 1);
        break;
      }
      head = std::min(count, head * 4);
    }
    reordered = true;
  }
  // Draw in id order so the token a given random number maps to does not depend on how the
  // standard library arranged equal-rank elements.
  if (reordered) std::sort(begin, end());
  return count;
}

int32_t Sampler::draw(std::span<const float> logits, size_t count) {
  float max = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < count; ++i) max = std::max(max, logits[static_cast<size_t>(ids_[i])]);
  double total = 0.0;
  for (size_t i = 0; i < count; ++i) {
    weights_[i] = std::exp(static_cast<double>(logits[static_cast<size_t>(ids_[i])]) - max);
    total += weights_[i];
  }
  const double target = rng_.next_double() * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < count; ++i) {
    cumulative += weights_[i];
    if (target < cumulative) return ids_[i];
  }
  return ids_[count - 1];  // rounding left target at the very top
}

}  // namespace lemma
