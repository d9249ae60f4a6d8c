#include "lemma/model/layers/rms_norm.h"

#include <cmath>

namespace lemma::layers {

void rms_norm(std::span<const float> x, int64_t rows, int64_t dim, std::span<const float> weight, float eps,
              std::span<float> y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * dim;
    float* out = y.data() + r * dim;
    double sum_sq = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum_sq += static_cast<double>(in[i]) * in[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(dim) + eps));
    for (int64_t i = 0; i < dim; ++i) out[i] = in[i] * scale * weight[static_cast<size_t>(i)];
  }
}

}  // namespace lemma::layers
