#include "lemma/sampling/speculative_sampling.h"

#include <algorithm>

namespace lemma {

namespace {

double total_of(std::span<const float> probs) {
  double total = 0.0;
  for (float v : probs) total += v;
  return total;
}

}  // namespace

int32_t draw_from(std::span<const float> probs, double u) {
  const double total = total_of(probs);
  if (!(total > 0.0)) return -1;
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0f) continue;
    cumulative += probs[i];
    last_positive = static_cast<int32_t>(i);
    if (cumulative > target) return last_positive;
  }
  return last_positive;  // rounding left the target at the very end
}

DraftVerdict verify_draft(std::span<const float> p, std::span<const float> q, int32_t draft, double u_accept,
                          double u_residual) {
  const double p_total = total_of(p), q_total = total_of(q);
  if (!(p_total > 0.0)) return {false, -1};
  const auto x = static_cast<size_t>(draft);
  const double px = draft >= 0 && x < p.size() ? p[x] / p_total : 0.0;
  const double qx = draft >= 0 && x < q.size() && q_total > 0.0 ? q[x] / q_total : 0.0;
  // Keep with probability min(1, px / qx). qx = 0 cannot come from a draw from q; such a draft is
  // refused (the residual is then p itself wherever q has no mass).
  if (qx > 0.0 && u_accept * qx < px) return {true, draft};
  // The residual max(0, p - q) in p's and q's own scales, drawn by inverse CDF in id order.
  double residual_total = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double qi = i < q.size() && q_total > 0.0 ? q[i] / q_total : 0.0;
    residual_total += std::max(0.0, p[i] / p_total - qi);
  }
  // p == q (up to rounding) leaves no residual: a rejection then has probability ~0, and p is the
  // right distribution to fall back to.
  if (!(residual_total > 1e-12)) return {false, draw_from(p, u_residual)};
  const double target = u_residual * residual_total;
  double cumulative = 0.0;
  int32_t last_positive = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    const double qi = i < q.size() && q_total > 0.0 ? q[i] / q_total : 0.0;
    const double r = std::max(0.0, p[i] / p_total - qi);
    if (r <= 0.0) continue;
    cumulative += r;
    last_positive = static_cast<int32_t>(i);
    if (cumulative > target) break;
  }
  return {false, last_positive};
}

}  // namespace lemma
