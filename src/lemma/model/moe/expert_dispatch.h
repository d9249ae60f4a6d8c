// Dispatch and combine of a MoE layer (G27), as explicit steps so expert parallelism can later
// turn them into an all-to-all without touching the maths: dispatch groups the step's (token, slot)
// pairs by expert — expert e's rows are contiguous, its tokens in ascending order — and copies each
// token's input row to every place it goes; combine sums each token's expert outputs back, weighted,
// slot 0 first. A token's result depends only on its own rows and weights, never on which other
// tokens chose the same expert (batch invariance). Pure functions over caller buffers; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/model/thread_team.h"

namespace lemma::moe {

struct ExpertDispatch {
  int64_t top_k = 0;
  std::vector<int64_t> offsets;   // [E + 1]: expert e's rows are [offsets[e], offsets[e + 1])
  std::vector<int32_t> sources;   // [T * top_k]: the (token * top_k + slot) each grouped row holds
  std::vector<int32_t> position;  // [T * top_k]: the grouped row of each (token * top_k + slot)

  int64_t num_rows() const { return static_cast<int64_t>(sources.size()); }
  int64_t tokens_of(int64_t expert) const { return offsets[static_cast<size_t>(expert) + 1] - offsets[static_cast<size_t>(expert)]; }
};

// experts: [T * top_k] ids in [0, num_experts) (route_token's, token by token). Reuses `out`'s storage.
void plan_dispatch(std::span<const int32_t> experts, int64_t top_k, int64_t num_experts, ExpertDispatch& out);

// grouped[r] = x[sources[r] / top_k] for every grouped row r; x: [T, H], grouped: [T * top_k, H].
void dispatch_rows(const ExpertDispatch& plan, std::span<const float> x, int64_t H, std::span<float> grouped,
                   ThreadTeam* team);

// out[t] = sum over slots s = 0, 1, .. of weights[t * top_k + s] * expert_out[position[t * top_k + s]],
// added in slot order; expert_out: [T * top_k, H] in grouped order, out: [T, H] (overwritten).
void combine_rows(const ExpertDispatch& plan, std::span<const float> expert_out, std::span<const float> weights,
                  int64_t H, std::span<float> out, ThreadTeam* team);

}  // namespace lemma::moe
