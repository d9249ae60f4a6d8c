#include "lemma/model/layers/paged_attention.h"

#include <algorithm>
#include <cmath>

namespace lemma::layers {

void paged_attention(std::span<const float> q, const KvLayerView& cache, std::span<const AttentionSequence> sequences,
                     const AttentionParams& p, std::span<float> scratch, std::span<float> out) {
  const int64_t hd = cache.head_dim;
  const int64_t group = p.num_heads / cache.num_kv_heads;
  const int64_t head_end = p.head_end < 0 ? p.num_heads : p.head_end;
  for (const AttentionSequence& seq : sequences) {
    const int64_t first_pos = seq.context_length - seq.num_tokens;
    for (int64_t i = 0; i < seq.num_tokens; ++i) {
      const int64_t pos = first_pos + i;
      const int64_t start = p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : 0;
      const int64_t row = seq.token_offset + i;
      for (int64_t h = p.head_begin; h < head_end; ++h) {
        const int64_t g = h / group;
        const float* qv = q.data() + (row * p.num_heads + h) * hd;
        float max_score = -INFINITY;
        for (int64_t j = start; j <= pos; ++j) {
          const float* kv = cache.keys + cache.slot_offset(seq.block_table, j) + g * hd;
          float s = 0.0f;
          for (int64_t d = 0; d < hd; ++d) s += qv[d] * kv[d];
          s *= p.scale;
          scratch[static_cast<size_t>(j - start)] = s;
          max_score = std::max(max_score, s);
        }
        float denom = 0.0f;
        for (int64_t j = start; j <= pos; ++j) {
          float& s = scratch[static_cast<size_t>(j - start)];
          s = std::exp(s - max_score);
          denom += s;
        }
        float* o = out.data() + (row * p.num_heads + h) * hd;
        std::fill(o, o + hd, 0.0f);
        for (int64_t j = start; j <= pos; ++j) {
          const float w = scratch[static_cast<size_t>(j - start)] / denom;
          const float* vv = cache.values + cache.slot_offset(seq.block_table, j) + g * hd;
          for (int64_t d = 0; d < hd; ++d) o[d] += w * vv[d];
        }
      }
    }
  }
}

}  // namespace lemma::layers
