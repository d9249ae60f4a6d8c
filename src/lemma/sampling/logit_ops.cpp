#include "lemma/sampling/logit_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lemma/kernels/vocab_ops.h"

namespace lemma {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float sanitized(float v) { return std::isnan(v) ? kNegInf : v; }

// Max of the sanitized logits and log(sum exp(l - max)); max is -inf when nothing is finite.
std::pair<float, double> max_and_log_sum(std::span<const float> logits) {
  float max = kNegInf;
  for (float v : logits) max = std::max(max, sanitized(v));
  if (max == kNegInf) return {max, 0.0};
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(sanitized(v)) - max);
  return {max, std::log(sum)};
}

}  // namespace

int32_t argmax(std::span<const float> logits, kernels::Isa isa) {
  const int64_t at = kernels::argmax_first(logits, isa);
  return at < 0 ? kNoToken : static_cast<int32_t>(at);
}

int64_t mask_nan(std::span<float> logits) { return lemma::copy_masking_nan(logits, logits); }

int64_t copy_masking_nan(std::span<const float> logits, std::span<float> out, kernels::Isa isa) {
  return kernels::copy_masking_nan(logits, out, isa);
}

void apply_temperature(std::span<float> logits, float temperature, kernels::Isa isa) {
  kernels::divide_row(logits, temperature, logits, isa);
}

void apply_logit_bias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [token, value] : bias) {
    if (token >= 0 && static_cast<size_t>(token) < logits.size()) logits[static_cast<size_t>(token)] += value;
  }
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                              std::span<const int32_t> output_tokens, float penalty, std::span<uint8_t> flags) {
  auto in_vocab = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < logits.size(); };
  for (std::span<const int32_t> tokens : {prompt_tokens, output_tokens}) {
    for (int32_t t : tokens) {
      if (!in_vocab(t) || flags[static_cast<size_t>(t)]) continue;
      flags[static_cast<size_t>(t)] = 1;
      float& v = logits[static_cast<size_t>(t)];
      v = v > 0.0f ? v / penalty : v * penalty;
    }
  }
  for (std::span<const int32_t> tokens : {prompt_tokens, output_tokens}) {
    for (int32_t t : tokens) {
      if (in_vocab(t)) flags[static_cast<size_t>(t)] = 0;
    }
  }
}

void apply_presence_frequency(std::span<float> logits, std::span<const int32_t> output_tokens,
                              float presence, float frequency, std::span<int32_t> counts) {
  for (int32_t t : output_tokens) {
    if (t >= 0 && static_cast<size_t>(t) < logits.size()) ++counts[static_cast<size_t>(t)];
  }
  for (int32_t t : output_tokens) {
    if (t < 0 || static_cast<size_t>(t) >= logits.size()) continue;
    int32_t& c = counts[static_cast<size_t>(t)];
    if (c == 0) continue;  // already applied for this token
    logits[static_cast<size_t>(t)] -= presence + frequency * static_cast<float>(c);
    c = 0;
  }
}

void softmax(std::span<const float> logits, std::span<float> probs) {
  const auto [max, log_sum] = max_and_log_sum(logits);
  for (size_t i = 0; i < logits.size(); ++i) {
    probs[i] = max == kNegInf ? 0.0f
                              : static_cast<float>(std::exp(static_cast<double>(sanitized(logits[i])) - max - log_sum));
  }
}

void log_softmax(std::span<const float> logits, std::span<float> logprobs) {
  const auto [max, log_sum] = max_and_log_sum(logits);
  for (size_t i = 0; i < logits.size(); ++i) {
    logprobs[i] = max == kNegInf ? kNegInf
                                 : static_cast<float>(static_cast<double>(sanitized(logits[i])) - max - log_sum);
  }
}

int64_t top_logprobs(std::span<const float> logits, std::span<TokenLogprob> out, std::span<int32_t> scratch) {
  const auto n = static_cast<int64_t>(std::min(out.size(), logits.size()));
  if (n == 0) return 0;
  for (size_t i = 0; i < logits.size(); ++i) scratch[i] = static_cast<int32_t>(i);
  auto ids = scratch.first(logits.size());
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    const float va = sanitized(logits[static_cast<size_t>(a)]), vb = sanitized(logits[static_cast<size_t>(b)]);
    return va != vb ? va > vb : a < b;
  });
  const auto [max, log_sum] = max_and_log_sum(logits);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = ids[static_cast<size_t>(i)];
    const double l = sanitized(logits[static_cast<size_t>(t)]);
    out[static_cast<size_t>(i)] = {t, max == kNegInf ? kNegInf : static_cast<float>(l - max - log_sum)};
  }
  return n;
}

}  // namespace lemma
