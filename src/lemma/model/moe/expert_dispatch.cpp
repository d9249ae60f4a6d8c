#include "lemma/model/moe/expert_dispatch.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace lemma::moe {

void plan_dispatch(std::span<const int32_t> experts, int64_t top_k, int64_t num_experts, ExpertDispatch& out) {
  out.top_k = top_k;
  out.offsets.assign(static_cast<size_t>(num_experts) + 1, 0);
  for (int32_t e : experts) {
    assert(e >= 0 && e < num_experts);
    ++out.offsets[static_cast<size_t>(e) + 1];
  }
  for (size_t e = 0; e < static_cast<size_t>(num_experts); ++e) out.offsets[e + 1] += out.offsets[e];
  out.sources.resize(experts.size());
  out.position.resize(experts.size());
  // A counting sort, stable: within an expert the (token, slot) pairs keep their order.
  std::vector<int64_t>& next = out.offsets;  // walked forward, then restored
  for (size_t i = 0; i < experts.size(); ++i) {
    const auto row = next[static_cast<size_t>(experts[i])]++;
    out.sources[static_cast<size_t>(row)] = static_cast<int32_t>(i);
    out.position[i] = static_cast<int32_t>(row);
  }
  for (size_t e = static_cast<size_t>(num_experts); e > 0; --e) next[e] = next[e - 1];
  next[0] = 0;
}

void dispatch_rows(const ExpertDispatch& plan, std::span<const float> x, int64_t H, std::span<float> grouped,
                   ThreadTeam* team) {
  assert(grouped.size() >= static_cast<size_t>(plan.num_rows() * H));
  parallel_rows(team, plan.num_rows(), H, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(grouped.data() + r * H, x.data() + plan.sources[static_cast<size_t>(r)] / plan.top_k * H,
                  static_cast<size_t>(H) * sizeof(float));
  });
}

void combine_rows(const ExpertDispatch& plan, std::span<const float> expert_out, std::span<const float> weights,
                  int64_t H, std::span<float> out, ThreadTeam* team) {
  const int64_t k = plan.top_k, T = plan.num_rows() / k;
  assert(out.size() >= static_cast<size_t>(T * H) && weights.size() >= static_cast<size_t>(T * k));
  parallel_rows(team, T, k * H, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = out.data() + t * H;
      for (int64_t s = 0; s < k; ++s) {
        const float w = weights[static_cast<size_t>(t * k + s)];
        const float* y = expert_out.data() + int64_t{plan.position[static_cast<size_t>(t * k + s)]} * H;
        if (s == 0) {
          for (int64_t i = 0; i < H; ++i) o[i] = w * y[i];
        } else {
          for (int64_t i = 0; i < H; ++i) o[i] += w * y[i];
        }
      }
    }
  });
}

}  // namespace lemma::moe
