#include "lemma/dist/reduce.h"

#include <algorithm>
#include <cstddef>

namespace lemma::dist {

namespace {
// Elements per block: the accumulator stays in L1 while every source streams through once.
constexpr std::size_t kBlock = 512;

template <typename Combine>
void reduce_blocks(std::span<float> out, std::span<const float* const> sources, Combine combine) {
  float acc[kBlock];
  for (std::size_t begin = 0; begin < out.size(); begin += kBlock) {
    const std::size_t count = std::min(kBlock, out.size() - begin);
    std::copy_n(sources[0] + begin, count, acc);
    for (std::size_t r = 1; r < sources.size(); ++r) {
      const float* src = sources[r] + begin;
      for (std::size_t i = 0; i < count; ++i) acc[i] = combine(acc[i], src[i]);
    }
    std::copy_n(acc, count, out.data() + begin);
  }
}
}  // namespace

void reduce_in_rank_order(std::span<float> out, std::span<const float* const> sources, ReduceOp op) {
  if (out.empty() || sources.empty()) return;
  switch (op) {
    case ReduceOp::kSum:
      reduce_blocks(out, sources, [](float a, float b) { return a + b; });
      break;
    case ReduceOp::kMax:
      // (a < b) ? b : a: a NaN on the left stays, one on the right is skipped, the same on every rank.
      reduce_blocks(out, sources, [](float a, float b) { return a < b ? b : a; });
      break;
  }
}

}  // namespace lemma::dist
