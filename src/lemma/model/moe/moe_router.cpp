#include "lemma/model/moe/moe_router.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace lemma::moe {

namespace {

constexpr float kExcluded = -std::numeric_limits<float>::infinity();

void compute_scores(std::span<const float> logits, RouterScoring scoring, std::span<float> scores) {
  if (scoring == RouterScoring::kSigmoid) {
    for (size_t e = 0; e < logits.size(); ++e) scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
    return;
  }
  float max = logits[0];
  for (float l : logits) max = std::max(max, l);
  float sum = 0.0f;
  for (size_t e = 0; e < logits.size(); ++e) sum += scores[e] = std::exp(logits[e] - max);
  for (size_t e = 0; e < logits.size(); ++e) scores[e] /= sum;
}

// Index of the largest value, the lowest index among equals; -1 when every value is excluded.
int64_t best_index(std::span<const float> values) {
  int64_t best = -1;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] != kExcluded && (best < 0 || values[i] > values[static_cast<size_t>(best)])) best = static_cast<int64_t>(i);
  return best;
}

float group_score(std::span<const float> choice, GroupScore rule) {
  float first = kExcluded, second = kExcluded;
  for (float c : choice) {
    if (c > first) {
      second = first;
      first = c;
    } else if (c > second) {
      second = c;
    }
  }
  return rule == GroupScore::kMax ? first : first + second;
}

// Excludes (choice = -inf) every expert outside the rule's top_groups best groups.
void restrict_to_groups(std::span<float> choice, const RoutingRule& rule) {
  const auto groups = static_cast<size_t>(rule.num_groups), per_group = choice.size() / groups;
  float scores[256];
  assert(groups <= 256);
  for (size_t g = 0; g < groups; ++g) scores[g] = group_score(choice.subspan(g * per_group, per_group), rule.group_score);
  bool kept[256] = {};
  for (int64_t i = 0; i < rule.top_groups; ++i) {
    const int64_t g = best_index(std::span<const float>(scores, groups));
    kept[g] = true;
    scores[g] = kExcluded;
  }
  for (size_t g = 0; g < groups; ++g)
    if (!kept[g])
      for (size_t e = 0; e < per_group; ++e) choice[g * per_group + e] = kExcluded;
}

}  // namespace

void route_token(std::span<const float> logits, std::span<const float> correction_bias, const RoutingRule& rule,
                 std::span<float> scratch, std::span<int32_t> experts, std::span<float> weights) {
  const size_t E = logits.size();
  const auto k = static_cast<size_t>(rule.top_k);
  assert(scratch.size() >= 2 * E && experts.size() == k && weights.size() == k);
  assert(correction_bias.empty() || correction_bias.size() == E);
  const std::span<float> scores = scratch.first(E), choice = scratch.subspan(E, E);
  compute_scores(logits, rule.scoring, scores);
  for (size_t e = 0; e < E; ++e) choice[e] = correction_bias.empty() ? scores[e] : scores[e] + correction_bias[e];
  if (rule.group_score != GroupScore::kNone) restrict_to_groups(choice, rule);
  for (size_t j = 0; j < k; ++j) {
    const int64_t e = best_index(choice);
    assert(e >= 0);
    experts[j] = static_cast<int32_t>(e);
    weights[j] = scores[static_cast<size_t>(e)];  // the unbiased score: the bias only chooses
    choice[static_cast<size_t>(e)] = kExcluded;
  }
  if (rule.normalize_top_k) {
    float sum = 0.0f;
    for (float w : weights) sum += w;
    for (float& w : weights) w /= sum;
  }
  if (rule.routed_scaling_factor != 1.0f)
    for (float& w : weights) w *= rule.routed_scaling_factor;
}

}  // namespace lemma::moe
