// SmoothQuant (Xiao et al. 2023) for W8A8: per input channel j of the matrices that read one
// RMSNorm's output (q/k/v after the attention norm, gate/up after the MLP norm),
//   s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)   (max|W_j| over all those matrices' column j)
// then X / s (folded into the norm weight: w_norm[j] / s_j) times s W (W[:, j] * s_j) computes the
// same product while moving activation outliers into the weights, which W8A8 quantizes per row.
// A channel with no activation or weight range keeps s_j = 1; s_j is clamped to >= 1e-5 as in the
// reference implementation. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lemma::quant {

// max |W[:, j]| of a row-major [rows, cols] matrix, folded into `absmax` (max with what it holds).
void accumulate_column_absmax(std::span<const float> weight, int64_t rows, int64_t cols, std::span<float> absmax);

// s_j for alpha in [0, 1]; InvalidArgument for a bad alpha or mismatched lengths.
std::vector<float> smoothing_factors(std::span<const float> activation_absmax, std::span<const float> weight_absmax,
                                     float alpha);

// norm[j] /= s[j].
void divide_norm(std::span<float> norm_weight, std::span<const float> s);
// W[:, j] *= s[j] for a row-major [rows, cols] matrix.
void scale_columns(std::span<float> weight, int64_t rows, int64_t cols, std::span<const float> s);

}  // namespace lemma::quant
