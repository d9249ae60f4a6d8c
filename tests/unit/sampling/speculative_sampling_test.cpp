// Exact speculative sampling: the verifier's output must be distributed as the target p whatever the
// draft q, for one position and for a chain of positions (drafts, residual draws and the bonus token).
// Checked by chi-square against the exact distribution and by the total-variation distance shrinking
// with the number of samples; a verifier that keeps every draft fails the same checks.
#include "lemma/sampling/speculative_sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lemma/sampling/rng.h"
#include "lemma/sampling/sampler.h"

namespace lemma {
namespace {

std::vector<float> random_distribution(Rng& rng, size_t n, double zero_chance = 0.0) {
  std::vector<float> p(n);
  double total = 0.0;
  for (auto& v : p) {
    v = rng.next_double() < zero_chance ? 0.0f : static_cast<float>(0.05 + rng.next_double());
    total += v;
  }
  if (total == 0.0) p[0] = 1.0f, total = 1.0;
  for (auto& v : p) v = static_cast<float>(v / total);
  return p;
}

// Pearson's statistic of `counts` against probabilities `expected` (cells with expectation 0 must be empty).
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& expected, int64_t n, int& dof) {
  double stat = 0.0;
  dof = -1;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = expected[i] * static_cast<double>(n);
    if (e == 0.0) {
      if (counts[i] != 0) return INFINITY;
      continue;
    }
    stat += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
    ++dof;
  }
  return stat;
}

// Upper 0.1% point of chi-square with `dof` degrees of freedom (Wilson-Hilferty).
double chi_square_critical(int dof) {
  const double k = dof, z = 3.0902;  // the normal's upper 0.1% point
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

double total_variation(const std::vector<int64_t>& counts, const std::vector<double>& expected, int64_t n) {
  double d = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) d += std::abs(static_cast<double>(counts[i]) / static_cast<double>(n) - expected[i]);
  return d / 2.0;
}

// One position: draft x ~ q, then the verdict; what comes out.
int32_t one_position(std::span<const float> p, std::span<const float> q, Rng& rng, bool keep_every_draft = false) {
  const int32_t x = draw_from(q, rng.next_double());
  if (keep_every_draft) return x;
  const double u_accept = rng.next_double();
  return verify_draft(p, q, x, u_accept, rng.next_double()).token;
}

TEST(SpeculativeSampling, EqualDistributionsKeepEveryDraft) {
  Rng rng(1);
  const auto p = random_distribution(rng, 50);
  for (int i = 0; i < 2000; ++i) {
    const int32_t x = draw_from(p, rng.next_double());
    const DraftVerdict v = verify_draft(p, p, x, rng.next_double(), rng.next_double());
    ASSERT_TRUE(v.accepted);
    ASSERT_EQ(v.token, x);
  }
}

TEST(SpeculativeSampling, DraftOutsideTheTargetIsAlwaysReplaced) {
  const std::vector<float> p = {0.0f, 0.5f, 0.5f}, q = {1.0f, 0.0f, 0.0f};
  Rng rng(2);
  for (int i = 0; i < 200; ++i) {
    const DraftVerdict v = verify_draft(p, q, 0, rng.next_double(), rng.next_double());
    EXPECT_FALSE(v.accepted);
    EXPECT_TRUE(v.token == 1 || v.token == 2);
  }
}

TEST(SpeculativeSampling, OnePositionFollowsTheTargetForAnyDraft) {
  Rng rng(3);
  constexpr size_t kVocab = 6;
  for (int trial = 0; trial < 4; ++trial) {
    const auto p = random_distribution(rng, kVocab, trial == 3 ? 0.3 : 0.0);
    const auto q = random_distribution(rng, kVocab, trial == 2 ? 0.3 : 0.0);
    const std::vector<double> expected(p.begin(), p.end());
    std::vector<int64_t> counts(kVocab, 0), wrong(kVocab, 0);
    double tv_small = 0.0;
    constexpr int64_t kSamples = 200000;
    for (int64_t n = 1; n <= kSamples; ++n) {
      ++counts[static_cast<size_t>(one_position(p, q, rng))];
      ++wrong[static_cast<size_t>(one_position(p, q, rng, /*keep_every_draft=*/true))];
      if (n == 2000) tv_small = total_variation(counts, expected, n);
    }
    int dof = 0;
    const double stat = chi_square(counts, expected, kSamples, dof);
    EXPECT_LT(stat, chi_square_critical(dof)) << "trial " << trial;
    // The distance to p shrinks with samples (about 1/sqrt(n)) and ends far below q's distance to p.
    std::vector<int64_t> q_counts(q.size());
    const double tv = total_variation(counts, expected, kSamples);
    const double tv_q = total_variation(wrong, expected, kSamples);
    EXPECT_LT(tv, tv_small) << "trial " << trial;
    EXPECT_LT(tv, 0.1 * tv_q) << "trial " << trial;
    // A verifier that keeps every draft samples q, which the same test refuses.
    EXPECT_GT(chi_square(wrong, expected, kSamples, dof), chi_square_critical(dof)) << "trial " << trial;
  }
}

// A chain of K = 2 drafts and the bonus token over a 4-token vocabulary with a target and a draft
// whose rows depend on the previous token: the three tokens that come out follow p's joint law.
TEST(SpeculativeSampling, ChainOfDraftsFollowsTheTargetsJointDistribution) {
  constexpr size_t kVocab = 4;
  Rng rng(4);
  // p[prev][x], q[prev][x]: prev = kVocab is the start.
  std::vector<std::vector<float>> p, q;
  for (size_t prev = 0; prev <= kVocab; ++prev) {
    p.push_back(random_distribution(rng, kVocab));
    q.push_back(random_distribution(rng, kVocab, 0.2));
  }
  std::vector<double> expected(kVocab * kVocab * kVocab);
  for (size_t a = 0; a < kVocab; ++a)
    for (size_t b = 0; b < kVocab; ++b)
      for (size_t c = 0; c < kVocab; ++c) expected[(a * kVocab + b) * kVocab + c] = double(p[kVocab][a]) * p[a][b] * p[b][c];
  std::vector<int64_t> counts(expected.size(), 0);
  constexpr int64_t kSamples = 300000;
  int64_t accepted = 0, proposed = 0;
  for (int64_t n = 0; n < kSamples; ++n) {
    // The draft proposes two tokens from its own chain.
    const int32_t d0 = draw_from(q[kVocab], rng.next_double());
    const int32_t d1 = draw_from(q[static_cast<size_t>(d0)], rng.next_double());
    std::vector<int32_t> out;
    size_t prev = kVocab;
    for (const int32_t draft : {d0, d1}) {
      const DraftVerdict v = verify_draft(p[prev], q[prev], draft, rng.next_double(), rng.next_double());
      ++proposed;
      out.push_back(v.token);
      prev = static_cast<size_t>(v.token);
      if (!v.accepted) break;
      ++accepted;
    }
    while (out.size() < 3) {  // the bonus token, then plain sampling for what is left of the three
      out.push_back(draw_from(p[prev], rng.next_double()));
      prev = static_cast<size_t>(out.back());
    }
    ++counts[(static_cast<size_t>(out[0]) * kVocab + static_cast<size_t>(out[1])) * kVocab + static_cast<size_t>(out[2])];
  }
  int dof = 0;
  const double stat = chi_square(counts, expected, kSamples, dof);
  EXPECT_LT(stat, chi_square_critical(dof));
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, proposed);  // both the kept and the residual path ran
}

TEST(SamplerDistribution, MatchesWhatTheSamplerDraws) {
  std::vector<float> logits = {1.0f, 2.5f, -1.0f, 0.3f, 2.4f, -INFINITY, 0.9f, 1.7f};
  const std::vector<int32_t> prompt = {1, 3}, outputs = {4};
  struct Case {
    float temperature, top_p, min_p, repetition;
    int32_t top_k;
  };
  for (const Case c : {Case{1.0f, 1.0f, 0.0f, 1.0f, 0}, Case{0.7f, 0.9f, 0.0f, 1.3f, 0}, Case{1.3f, 1.0f, 0.05f, 1.0f, 3},
                       Case{0.0f, 1.0f, 0.0f, 1.0f, 0}}) {
    SamplingParams params;
    params.temperature = c.temperature;
    params.top_p = c.top_p;
    params.min_p = c.min_p;
    params.top_k = c.top_k;
    params.repetition_penalty = c.repetition;
    params.seed = 9;
    Sampler sampler(params, 0);
    SamplerScratch scratch;
    std::vector<float> probs(logits.size());
    sampler.distribution(logits, prompt, outputs, scratch, probs);
    double total = 0.0;
    for (float v : probs) total += v;
    EXPECT_NEAR(total, 1.0, 1e-5);
    EXPECT_EQ(probs[5], 0.0f);  // -inf never
    std::vector<int64_t> counts(logits.size(), 0);
    constexpr int64_t kSamples = 60000;
    for (int64_t n = 0; n < kSamples; ++n) {
      sampler.seek(static_cast<uint64_t>(n));
      ++counts[static_cast<size_t>(sampler.sample(logits, prompt, outputs, scratch).token)];
    }
    int dof = 0;
    const std::vector<double> expected(probs.begin(), probs.end());
    if (c.temperature == 0.0f) {
      EXPECT_EQ(counts[1], kSamples);  // greedy: all the mass on the argmax (2.5 at id 1)
      EXPECT_EQ(probs[1], 1.0f);
      continue;
    }
    EXPECT_LT(chi_square(counts, expected, kSamples, dof), chi_square_critical(std::max(dof, 1)));
    if (c.top_k == 3) {
      EXPECT_EQ(std::count_if(probs.begin(), probs.end(), [](float v) { return v > 0.0f; }), 3);
    }
  }
}

}  // namespace
}  // namespace lemma
