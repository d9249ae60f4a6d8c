// RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight, alone or fused with the
// residual add before it (G20). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "lemma/kernels/isa.h"

namespace lemma::layers {

// x, y: [rows, dim] f32 (may alias); weight: [dim] f32.
void rms_norm(std::span<const float> x, int64_t rows, int64_t dim, std::span<const float> weight, float eps,
              std::span<float> y, kernels::Isa isa = kernels::detected_isa());

// residual += delta, then y = rms_norm(residual), row by row (kernels::add_rmsnorm): bitwise the
// same as the two steps apart. residual, delta, y: [rows, dim]; y may alias delta, not residual.
void add_rms_norm(std::span<float> residual, std::span<const float> delta, int64_t rows, int64_t dim,
                  std::span<const float> weight, float eps, std::span<float> y,
                  kernels::Isa isa = kernels::detected_isa());

}  // namespace lemma::layers
