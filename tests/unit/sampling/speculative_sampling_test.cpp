// Exact speculative sampling: the verifier's output must be distributed as the target p whatever the
// draft q, for one position, for a chain of positions (drafts, residual draws and the bonus token),
// and for several candidates per position drawn without replacement (one node with k = 2, 3, and a
// depth-2 tree). Checked by chi-square against the exact distribution and by the total-variation
// distance shrinking with the number of samples; a verifier that keeps every draft, one that forgets
// to take the refused candidates out of q, and one whose acceptance is 5% too generous fail the same
// checks.
#include "lemma/sampling/speculative_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// A target p and a draft q over a 4-token vocabulary whose rows depend on the previous token
// (p[prev][x], q[prev][x]; prev = kMarkovVocab is the start), and the exact law of the first three
// tokens under p: expected[(a * 4 + b) * 4 + c] = p(a) p(b | a) p(c | b).
constexpr size_t kMarkovVocab = 4;
struct MarkovPair {
  std::vector<std::vector<float>> p, q;
  std::vector<double> expected;
};

MarkovPair markov_pair(Rng& rng) {
  constexpr size_t v = kMarkovVocab;
  MarkovPair m;
  for (size_t prev = 0; prev <= v; ++prev) {
    m.p.push_back(random_distribution(rng, v));
    m.q.push_back(random_distribution(rng, v, 0.2));
  }
  m.expected.resize(v * v * v);
  for (size_t a = 0; a < v; ++a)
    for (size_t b = 0; b < v; ++b)
      for (size_t c = 0; c < v; ++c) m.expected[(a * v + b) * v + c] = double(m.p[v][a]) * m.p[a][b] * m.p[b][c];
  return m;
}

// A chain of K = 2 drafts and the bonus token over a 4-token vocabulary with a target and a draft
// whose rows depend on the previous token: the three tokens that come out follow p's joint law.
TEST(SpeculativeSampling, ChainOfDraftsFollowsTheTargetsJointDistribution) {
  constexpr size_t kVocab = kMarkovVocab;
  Rng rng(4);
  const auto [p, q, expected] = markov_pair(rng);
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

// Weights exp(4u), some zero: rows far apart, as a draft model and its target often are.
std::vector<float> peaked_distribution(Rng& rng, size_t n, double zero_chance) {
  std::vector<float> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i > 0 && rng.next_double() < zero_chance ? 0.0f : static_cast<float>(std::exp(4.0 * rng.next_double()));
  double total = 0.0;
  for (float v : p) total += v;
  for (auto& v : p) v = static_cast<float>(v / total);
  return p;
}

// `k` candidates drawn from q without replacement (fewer when q has fewer tokens with mass).
std::vector<int32_t> draw_without_replacement(std::span<const float> q, size_t k, Rng& rng) {
  std::vector<float> left(q.begin(), q.end());
  std::vector<int32_t> out;
  while (out.size() < k) {
    const int32_t x = draw_from(left, rng.next_double());
    if (x < 0) break;
    left[static_cast<size_t>(x)] = 0.0f;
    out.push_back(x);
  }
  return out;
}

// How a candidate verifier may be wrong (the checks must catch each).
enum class Verifier { kExact, kStaleDraft, kGenerous };

// A plain double-precision recursive rejection sampler, independent of verify_candidates, that can
// be made slightly wrong: kStaleDraft keeps refused candidates in q (the rule for i.i.d. candidates
// applied to draws without replacement), kGenerous accepts with min(1, 1.05 p/q).
CandidateVerdict reference_verifier(std::span<const float> p, std::span<const float> q,
                                    std::span<const int32_t> candidates, Rng& rng, Verifier how) {
  std::vector<double> r(p.begin(), p.end()), d(q.begin(), q.end());
  const auto normalise = [](std::vector<double>& v) {
    double t = 0.0;
    for (double x : v) t += x;
    for (double& x : v) x /= t;
  };
  normalise(r);
  normalise(d);
  for (size_t j = 0; j < candidates.size(); ++j) {
    const auto x = static_cast<size_t>(candidates[j]);
    const double ratio = (how == Verifier::kGenerous ? 1.05 : 1.0) * r[x] / d[x];
    if (rng.next_double() < ratio) return {static_cast<int32_t>(j), candidates[j]};
    for (size_t i = 0; i < r.size(); ++i) r[i] = std::max(0.0, r[i] - d[i]);
    normalise(r);
    if (how != Verifier::kStaleDraft) {
      d[x] = 0.0;
      normalise(d);
    }
  }
  const double u = rng.next_double();
  double c = 0.0;
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i] > 0.0 && (c += r[i]) > u) return {-1, static_cast<int32_t>(i)};
  return {-1, static_cast<int32_t>(std::max_element(r.begin(), r.end()) - r.begin())};
}

// verify_candidates with fresh uniforms for `candidates`.
CandidateVerdict verify(std::span<const float> p, std::span<const float> q, std::span<const int32_t> candidates, Rng& rng,
                        CandidateScratch& scratch) {
  std::vector<double> u(candidates.size());
  for (double& v : u) v = rng.next_double();
  return verify_candidates(p, q, candidates, u, rng.next_double(), scratch);
}

TEST(MultiCandidateSampling, OneCandidateIsVerifyDraft) {
  Rng rng(5);
  CandidateScratch scratch;
  for (int i = 0; i < 500; ++i) {
    const auto p = random_distribution(rng, 7, 0.3), q = random_distribution(rng, 7, 0.3);
    const int32_t x = draw_from(q, rng.next_double());
    const double u = rng.next_double(), v = rng.next_double();
    const DraftVerdict one = verify_draft(p, q, x, u, v);
    const CandidateVerdict many = verify_candidates(p, q, std::span(&x, 1), std::span(&u, 1), v, scratch);
    ASSERT_EQ(one.accepted, many.accepted == 0);
    ASSERT_EQ(one.token, many.token);
  }
}

TEST(MultiCandidateSampling, RefusedCandidatesNeverComeBackAndEqualRowsKeepTheFirst) {
  Rng rng(6);
  CandidateScratch scratch;
  for (int i = 0; i < 2000; ++i) {
    const auto p = random_distribution(rng, 6, 0.2), q = random_distribution(rng, 6, 0.2);
    const auto c = draw_without_replacement(q, 3, rng);
    const CandidateVerdict v = verify(p, q, c, rng, scratch);
    ASSERT_GE(v.token, 0);
    if (v.accepted >= 0) {
      ASSERT_EQ(v.token, c[static_cast<size_t>(v.accepted)]);
    } else {
      ASSERT_EQ(std::count(c.begin(), c.end(), v.token), 0) << "the residual drew a refused candidate";
    }
    const CandidateVerdict same = verify(q, q, c, rng, scratch);  // p == q: the first is always kept
    ASSERT_EQ(same.accepted, 0);
  }
}

// One node with k = 2 and 3 candidates drawn without replacement from q, over a 6-token vocabulary
// (dense rows, zeros in q, zeros in p): the output follows p in each trial. A wrong verifier may be
// nearly right for one pair of rows, so each is judged on the three trials together (the sum of
// independent chi-squares is a chi-square with the summed degrees of freedom) and must be refused.
TEST(MultiCandidateSampling, OneNodeFollowsTheTargetForAnyDraft) {
  Rng rng(7);
  constexpr size_t kVocab = 6;
  constexpr int kTrials = 3;
  CandidateScratch scratch;
  for (const size_t k : {2u, 3u}) {
    double chi_stale = 0.0, chi_generous = 0.0;
    for (int trial = 0; trial < kTrials; ++trial) {
      SCOPED_TRACE(::testing::Message() << "k " << k << " trial " << trial);
      const auto p = peaked_distribution(rng, kVocab, trial == 2 ? 0.3 : 0.0);
      const auto q = peaked_distribution(rng, kVocab, trial == 1 ? 0.3 : 0.0);
      const std::vector<double> expected(p.begin(), p.end());
      std::vector<int64_t> counts(kVocab, 0), stale(kVocab, 0), generous(kVocab, 0), reference(kVocab, 0);
      double tv_small = 0.0;
      int64_t kept_later = 0;  // a candidate after the first was kept: the recursion ran
      constexpr int64_t kSamples = 150000;
      for (int64_t n = 1; n <= kSamples; ++n) {
        const auto c = draw_without_replacement(q, k, rng);
        const CandidateVerdict v = verify(p, q, c, rng, scratch);
        ++counts[static_cast<size_t>(v.token)];
        kept_later += v.accepted > 0;
        ++reference[static_cast<size_t>(reference_verifier(p, q, c, rng, Verifier::kExact).token)];
        ++stale[static_cast<size_t>(reference_verifier(p, q, c, rng, Verifier::kStaleDraft).token)];
        ++generous[static_cast<size_t>(reference_verifier(p, q, c, rng, Verifier::kGenerous).token)];
        if (n == 1500) tv_small = total_variation(counts, expected, n);
      }
      int dof = 0;
      const double critical = chi_square_critical(static_cast<int>(kVocab) - 1);
      const double chi = chi_square(counts, expected, kSamples, dof);
      EXPECT_LT(chi, critical);
      EXPECT_LT(chi_square(reference, expected, kSamples, dof), critical);
      const double tv = total_variation(counts, expected, kSamples);
      EXPECT_LT(tv, tv_small);
      EXPECT_LT(tv, 0.006);  // ~ sqrt(vocab / samples) / 2
      EXPECT_GT(kept_later, 0);
      const double stale_now = chi_square(stale, expected, kSamples, dof);
      const double generous_now = chi_square(generous, expected, kSamples, dof);
      chi_stale += stale_now;
      chi_generous += generous_now;
      std::printf("k %zu trial %d: chi-square exact %.1f, stale q %.1f, 5%% generous %.1f (critical %.1f); TV %.4f\n", k,
                  trial, chi, stale_now, generous_now, critical, tv);
    }
    const double critical_all = chi_square_critical(kTrials * (static_cast<int>(kVocab) - 1));
    EXPECT_GT(chi_stale, critical_all) << "k " << k << ": a verifier that keeps refused candidates in q passed";
    EXPECT_GT(chi_generous, critical_all) << "k " << k << ": a verifier 5% too generous passed";
  }
}

// A depth-2 stochastic tree over a 4-token vocabulary: three candidates under the last token, two
// under each of them (nine nodes), rows depending on the previous token; the walk follows the kept
// candidate, then the bonus token, then plain sampling: the first three tokens follow p's joint law.
TEST(MultiCandidateSampling, DepthTwoTreeFollowsTheTargetsJointDistribution) {
  constexpr size_t kVocab = kMarkovVocab;
  Rng rng(9);
  const auto [p, q, expected] = markov_pair(rng);
  CandidateScratch scratch;
  const auto run = [&](Verifier how, int64_t samples, int64_t* deep_accepts) {
    std::vector<int64_t> counts(expected.size(), 0);
    for (int64_t n = 0; n < samples; ++n) {
      const auto level1 = draw_without_replacement(q[kVocab], 3, rng);
      std::vector<std::vector<int32_t>> level2;
      for (const int32_t a : level1) level2.push_back(draw_without_replacement(q[static_cast<size_t>(a)], 2, rng));
      const auto check = [&](size_t prev, std::span<const int32_t> c) {
        return how == Verifier::kExact ? verify(p[prev], q[prev], c, rng, scratch)
                                       : reference_verifier(p[prev], q[prev], c, rng, how);
      };
      std::vector<int32_t> out;
      const CandidateVerdict v1 = check(kVocab, level1);
      out.push_back(v1.token);
      if (v1.accepted >= 0) {
        const CandidateVerdict v2 = check(static_cast<size_t>(v1.token), level2[static_cast<size_t>(v1.accepted)]);
        out.push_back(v2.token);
        if (deep_accepts != nullptr && v2.accepted >= 0) ++*deep_accepts;
      }
      while (out.size() < 3) out.push_back(draw_from(p[static_cast<size_t>(out.back())], rng.next_double()));
      ++counts[(static_cast<size_t>(out[0]) * kVocab + static_cast<size_t>(out[1])) * kVocab + static_cast<size_t>(out[2])];
    }
    return counts;
  };
  constexpr int64_t kSamples = 200000;
  int64_t deep = 0;
  int dof = 0;
  const auto counts = run(Verifier::kExact, kSamples, &deep);
  const double critical = chi_square_critical(static_cast<int>(expected.size()) - 1);
  const double chi = chi_square(counts, expected, kSamples, dof);
  EXPECT_LT(chi, critical);
  EXPECT_GT(deep, 0);  // both levels kept candidates
  const double chi_stale = chi_square(run(Verifier::kStaleDraft, kSamples, nullptr), expected, kSamples, dof);
  const double chi_generous = chi_square(run(Verifier::kGenerous, kSamples, nullptr), expected, kSamples, dof);
  EXPECT_GT(chi_stale, critical);
  EXPECT_GT(chi_generous, critical);
  std::printf("depth-2 tree: chi-square exact %.1f, stale q %.1f, 5%% generous %.1f (critical %.1f)\n", chi, chi_stale,
              chi_generous, critical);
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
