// RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace lemma::layers {

// x, y: [rows, dim] f32 (may alias); weight: [dim] f32.
void rms_norm(std::span<const float> x, int64_t rows, int64_t dim, std::span<const float> weight, float eps,
              std::span<float> y);

}  // namespace lemma::layers
