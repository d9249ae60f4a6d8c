#include "lemma/model/layers/rope.h"

#include <cmath>
#include <vector>

namespace lemma::layers {

void apply_rope(std::span<float> x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                std::span<const int64_t> positions, const RopeFrequencies& freqs, RopeLayout layout) {
  const size_t half = freqs.inv_freq.size();
  // cos/sin of one position: on the stack for every usual head size (no allocation per step).
  constexpr size_t kStackHalf = 256;
  float cos_stack[kStackHalf], sin_stack[kStackHalf];
  std::vector<float> cos_heap, sin_heap;
  if (half > kStackHalf) {
    cos_heap.resize(half);
    sin_heap.resize(half);
  }
  float* cos_v = half > kStackHalf ? cos_heap.data() : cos_stack;
  float* sin_v = half > kStackHalf ? sin_heap.data() : sin_stack;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const double pos = static_cast<double>(positions[static_cast<size_t>(t)]);
    for (size_t i = 0; i < half; ++i) {
      const double angle = pos * freqs.inv_freq[i];
      cos_v[i] = static_cast<float>(std::cos(angle) * freqs.attention_factor);
      sin_v[i] = static_cast<float>(std::sin(angle) * freqs.attention_factor);
    }
    for (int64_t h = 0; h < num_heads; ++h) {
      float* v = x.data() + (t * num_heads + h) * head_dim;
      for (size_t i = 0; i < half; ++i) {
        const size_t a = layout == RopeLayout::kHalfSplit ? i : 2 * i;
        const size_t b = layout == RopeLayout::kHalfSplit ? i + half : 2 * i + 1;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * cos_v[i] - x1 * sin_v[i];
        v[b] = x1 * cos_v[i] + x0 * sin_v[i];
      }
    }
  }
}

}  // namespace lemma::layers
