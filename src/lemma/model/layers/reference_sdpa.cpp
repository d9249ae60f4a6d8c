#include "lemma/model/layers/reference_sdpa.h"

#include <cmath>
#include <limits>
#include <vector>

namespace lemma::layers {

void reference_sdpa(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                    const SdpaShape& s, const SdpaMask& mask, float scale, std::span<float> out) {
  const int64_t group = s.num_heads / s.num_kv_heads;
  std::vector<double> scores(static_cast<size_t>(s.num_keys));
  for (int64_t i = 0; i < s.num_queries; ++i) {
    const int64_t qpos = mask.query_offset + i;
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const int64_t g = h / group;
      const float* qv = q.data() + (i * s.num_heads + h) * s.head_dim;
      double max_score = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s.num_keys; ++j) {
        bool visible = true;
        if (mask.causal && j > qpos) visible = false;
        if (mask.sliding_window > 0 && qpos - j >= mask.sliding_window) visible = false;
        if (!mask.key_is_padding.empty() && mask.key_is_padding[static_cast<size_t>(j)]) visible = false;
        double sc = -std::numeric_limits<double>::infinity();
        if (visible) {
          const float* kv = k.data() + (j * s.num_kv_heads + g) * s.head_dim;
          sc = 0.0;
          for (int64_t d = 0; d < s.head_dim; ++d) sc += static_cast<double>(qv[d]) * kv[d];
          sc *= scale;
          if (sc > max_score) max_score = sc;
        }
        scores[static_cast<size_t>(j)] = sc;
      }
      float* o = out.data() + (i * s.num_heads + h) * s.head_dim;
      std::vector<double> acc(static_cast<size_t>(s.head_dim), 0.0);
      double denom = 0.0;
      if (std::isfinite(max_score)) {
        for (int64_t j = 0; j < s.num_keys; ++j) {
          const double sc = scores[static_cast<size_t>(j)];
          if (!std::isfinite(sc)) continue;
          const double p = std::exp(sc - max_score);
          denom += p;
          const float* vv = v.data() + (j * s.num_kv_heads + g) * s.head_dim;
          for (int64_t d = 0; d < s.head_dim; ++d) acc[static_cast<size_t>(d)] += p * vv[d];
        }
      }
      for (int64_t d = 0; d < s.head_dim; ++d)
        o[d] = denom > 0.0 ? static_cast<float>(acc[static_cast<size_t>(d)] / denom) : 0.0f;
    }
  }
}

}  // namespace lemma::layers
