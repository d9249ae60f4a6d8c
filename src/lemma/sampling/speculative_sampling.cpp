#include "lemma/sampling/speculative_sampling.h"

#include <algorithm>

namespace lemma {

namespace {

double total_of(std::span<const float> probs) {
  double total = 0.0;
  for (float v : probs) total += v;
  return total;
}

// Inverse CDF over a row whose total is `total`: the smallest id whose cumulative mass exceeds
// u * total (the last positive one when rounding leaves the target at the end); -1 when all are 0.
template <typename T>
int32_t inverse_cdf(std::span<const T> row, double total, double u) {
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = -1;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] <= T{0}) continue;
    cumulative += row[i];
    last_positive = static_cast<int32_t>(i);
    if (cumulative > target) break;
  }
  return last_positive;
}

}  // namespace

int32_t draw_from(std::span<const float> probs, double u) {
  const double total = total_of(probs);
  return total > 0.0 ? inverse_cdf(probs, total, u) : -1;
}

CandidateVerdict verify_candidates(std::span<const float> p, std::span<const float> q,
                                   std::span<const int32_t> candidates, std::span<const double> u_accept,
                                   double u_residual, CandidateScratch& scratch) {
  const double p_total = total_of(p);
  if (!(p_total > 0.0)) return {-1, -1};
  // residual = p_j up to the scale residual_total (p_1 = p / p_total, so 1); draft = q_j up to q_left.
  std::vector<double>& residual = scratch.residual;
  std::vector<double>& draft = scratch.draft;
  residual.resize(p.size());
  draft.assign(p.size(), 0.0);
  for (size_t i = 0; i < p.size(); ++i) residual[i] = p[i] / p_total;
  std::copy_n(q.begin(), std::min(q.size(), p.size()), draft.begin());
  double residual_total = 1.0;
  double q_left = total_of(q);
  for (size_t j = 0; j < candidates.size() && j < u_accept.size(); ++j) {
    if (!(q_left > 0.0)) break;  // q has nothing left to have drawn from
    const auto x = static_cast<size_t>(candidates[j]);
    const bool known = candidates[j] >= 0 && x < residual.size();
    const double px = known ? residual[x] : 0.0;  // p_j(x) * residual_total
    const double qx = known ? draft[x] / q_left : 0.0;
    // Keep with probability min(1, p_j(x) / q_j(x)); qx = 0 cannot come from a draw from q_j.
    if (qx > 0.0 && u_accept[j] * qx * residual_total < px) return {static_cast<int32_t>(j), candidates[j]};
    // Refused: p_{j+1} = max(0, p_j - q_j), in both rows' own scales.
    double next_total = 0.0;
    for (size_t i = 0; i < residual.size(); ++i) next_total += std::max(0.0, residual[i] / residual_total - draft[i] / q_left);
    // p_j == q_j (up to rounding) leaves no residual: the refusal had probability ~0, and p_j is the
    // right distribution to fall back to.
    if (!(next_total > 1e-12)) break;
    for (size_t i = 0; i < residual.size(); ++i) residual[i] = std::max(0.0, residual[i] / residual_total - draft[i] / q_left);
    residual_total = next_total;
    if (known) {  // without replacement: the next candidate came from q without this one
      q_left -= draft[x];
      draft[x] = 0.0;
    }
  }
  return {-1, inverse_cdf(std::span<const double>(residual), residual_total, u_residual)};
}

DraftVerdict verify_draft(std::span<const float> p, std::span<const float> q, int32_t draft, double u_accept,
                          double u_residual) {
  CandidateScratch scratch;
  const CandidateVerdict v = verify_candidates(p, q, std::span<const int32_t>(&draft, 1),
                                               std::span<const double>(&u_accept, 1), u_residual, scratch);
  return {v.accepted == 0, v.token};
}

}  // namespace lemma
