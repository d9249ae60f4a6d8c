#include "lemma/model/layers/rope.h"

#include <cassert>
#include <cmath>
#include <vector>

namespace lemma::layers {

void rope_angles(std::span<const int64_t> positions, const RopeFrequencies& freqs, std::span<float> cos,
                 std::span<float> sin) {
  const size_t half = freqs.inv_freq.size();
  assert(cos.size() >= positions.size() * half && sin.size() >= positions.size() * half);
  for (size_t t = 0; t < positions.size(); ++t) {
    const double pos = static_cast<double>(positions[t]);
    for (size_t i = 0; i < half; ++i) {
      const double angle = pos * freqs.inv_freq[i];
      cos[t * half + i] = static_cast<float>(std::cos(angle) * freqs.attention_factor);
      sin[t * half + i] = static_cast<float>(std::sin(angle) * freqs.attention_factor);
    }
  }
}

void rotate_heads(float* x, int64_t num_heads, int64_t head_dim, const float* cos, const float* sin, size_t half,
                  RopeLayout layout) {
  for (int64_t h = 0; h < num_heads; ++h) {
    float* v = x + h * head_dim;
    for (size_t i = 0; i < half; ++i) {
      const size_t a = layout == RopeLayout::kHalfSplit ? i : 2 * i;
      const size_t b = layout == RopeLayout::kHalfSplit ? i + half : 2 * i + 1;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos[i] - x1 * sin[i];
      v[b] = x1 * cos[i] + x0 * sin[i];
    }
  }
}

void apply_rope(std::span<float> x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                std::span<const int64_t> positions, const RopeFrequencies& freqs, RopeLayout layout) {
  const size_t half = freqs.inv_freq.size();
  // cos/sin of one position: on the stack for every usual head size (no allocation per call).
  constexpr size_t kStackHalf = 256;
  float cos_stack[kStackHalf], sin_stack[kStackHalf];
  std::vector<float> cos_heap, sin_heap;
  if (half > kStackHalf) {
    cos_heap.resize(half);
    sin_heap.resize(half);
  }
  const std::span<float> cos_v = half > kStackHalf ? std::span<float>(cos_heap) : std::span<float>(cos_stack, half);
  const std::span<float> sin_v = half > kStackHalf ? std::span<float>(sin_heap) : std::span<float>(sin_stack, half);
  for (int64_t t = 0; t < num_tokens; ++t) {
    rope_angles(positions.subspan(static_cast<size_t>(t), 1), freqs, cos_v, sin_v);
    rotate_heads(x.data() + t * num_heads * head_dim, num_heads, head_dim, cos_v.data(), sin_v.data(), half, layout);
  }
}

}  // namespace lemma::layers
