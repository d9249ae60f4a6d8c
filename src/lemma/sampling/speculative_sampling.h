// Exact speculative sampling (Leviathan et al. 2023, Chen et al. 2023): a draft token x drawn from the
// draft's distribution q is kept with probability min(1, p(x) / q(x)), where p is the target's
// distribution at that position; otherwise the output is drawn from norm(max(0, p - q)). Either way
// the token that comes out is distributed exactly as p, so speculation never changes what a request
// samples, only how many forwards it takes.
//
// Several candidates at one position (a node of a stochastic token tree, G12) are verified by
// recursive rejection sampling (SpecInfer, Miao et al. 2024; multi-draft speculative sampling) for
// candidates drawn from q WITHOUT replacement (Jeon et al. 2024, "recursive speculative decoding"):
// x_1 ~ q_1 = q, and x_j ~ q_j = q with x_1..x_{j-1} removed, renormalised. With p_1 = p, candidate j
// is kept with probability min(1, p_j(x_j) / q_j(x_j)); when refused, p_{j+1} = norm(max(0, p_j - q_j)).
// After every refusal the output is drawn from p_{m+1}. Why the output is p exactly, by induction
// from the last candidate: given the history h of refused candidates x_1..x_{j-1}, x_j ~ q_j(.|h), so
// step j outputs x with probability min(p_j, q_j)(x), and refuses with probability
// beta = sum max(0, p_j - q_j); whatever x_j was refused, the steps after it output p_{j+1}, which
// depends only on h (by the induction hypothesis: the final draw outputs p_{m+1} by construction), so
// step j's law is min(p_j, q_j) + beta * max(0, p_j - q_j) / beta = p_j. A refused candidate has
// p_j(x_j) < q_j(x_j), so p_{j+1}(x_j) = 0: the residual never returns a refused candidate. One
// candidate is the chain's rule above. Pure functions over dense probability rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lemma {

struct DraftVerdict {
  bool accepted = false;  // the draft token stands
  int32_t token = -1;     // the draft, or the residual's draw (-1: p has no mass at all)
};

// `p` and `q` are probability rows over the vocabulary (non-negative; their totals need not be
// exactly 1: each is used relative to its own total). `draft` was drawn from q. `u_accept` and
// `u_residual` are independent uniforms in [0, 1). When p and q are equal the draft is always kept.
DraftVerdict verify_draft(std::span<const float> p, std::span<const float> q, int32_t draft, double u_accept,
                          double u_residual);

struct CandidateVerdict {
  int32_t accepted = -1;  // index into the candidates of the one kept; -1: all refused
  int32_t token = -1;     // that candidate, or the residual's draw (-1: p has no mass at all)
};

// The rows verify_candidates works in (vocabulary-sized, grown on first use); one per thread.
struct CandidateScratch {
  std::vector<double> residual;  // p_j, unnormalised
  std::vector<double> draft;     // q with the refused candidates removed, unnormalised
};

// Recursive rejection sampling of `candidates` drawn from `q` without replacement, in that order
// (see above). `u_accept` holds one independent uniform per candidate, `u_residual` one more. Rows as
// for verify_draft. A candidate q cannot have drawn (no mass left at it, e.g. a repeat) is refused.
// With one candidate the verdict and the arithmetic are verify_draft's.
CandidateVerdict verify_candidates(std::span<const float> p, std::span<const float> q,
                                   std::span<const int32_t> candidates, std::span<const double> u_accept,
                                   double u_residual, CandidateScratch& scratch);

// The smallest id whose cumulative mass exceeds u * total (inverse CDF, in id order); -1 when the
// total is 0. `probs` must be non-negative.
int32_t draw_from(std::span<const float> probs, double u);

}  // namespace lemma
