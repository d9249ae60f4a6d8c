// Exact speculative sampling (Leviathan et al. 2023, Chen et al. 2023): a draft token x drawn from the
// draft's distribution q is kept with probability min(1, p(x) / q(x)), where p is the target's
// distribution at that position; otherwise the output is drawn from norm(max(0, p - q)). Either way
// the token that comes out is distributed exactly as p, so speculation never changes what a request
// samples, only how many forwards it takes. Pure functions over dense probability rows.
#pragma once

#include <cstdint>
#include <span>

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

// The smallest id whose cumulative mass exceeds u * total (inverse CDF, in id order); -1 when the
// total is 0. `probs` must be non-negative.
int32_t draw_from(std::span<const float> probs, double u);

}  // namespace lemma
