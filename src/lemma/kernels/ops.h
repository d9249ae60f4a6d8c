// Elementwise and row ops the model layers need besides matmul (RoPE lives in model/layers).
// Pure functions over caller-owned float spans; no allocation; thread-safe. Sizes must match
// (asserted). Output may alias an input of the same size (in-place use). Each op has a scalar
// reference (Isa::kScalar) and AVX2/AVX-512 versions; the overloads without `isa` use
// detected_isa(). Vector results differ from the reference by a few ulp (vector exp, summation
// order) but, per ISA, never depend on other rows, so batch invariance is kept.
#pragma once

#include <span>

#include "lemma/kernels/isa.h"

namespace lemma::kernels {

// y[i] = (x[i] * r) * weight[i], r = 1 / sqrt(mean(x^2) + eps), the mean accumulated in double.
void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);
void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y, Isa isa);

// The residual add followed by the next RMSNorm, in two passes over the row instead of three:
// residual[i] += delta[i], then y = rmsnorm(residual, weight, eps). Bitwise the same as add()
// then rmsnorm() on the same ISA (same lanes, same order). y may alias delta, not residual.
void add_rmsnorm(std::span<float> residual, std::span<const float> delta, std::span<const float> weight, float eps,
                 std::span<float> y);
void add_rmsnorm(std::span<float> residual, std::span<const float> delta, std::span<const float> weight, float eps,
                 std::span<float> y, Isa isa);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g))  (SwiGLU's gating).
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out);
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out, Isa isa);

// y = softmax(x): exp(x - max) / sum. Entries of -inf give 0. If every entry is -inf the result
// is all zeros; a NaN anywhere makes every output NaN.
void softmax(std::span<const float> x, std::span<float> y);
void softmax(std::span<const float> x, std::span<float> y, Isa isa);

// out[i] = a[i] + b[i].
void add(std::span<const float> a, std::span<const float> b, std::span<float> out);
void add(std::span<const float> a, std::span<const float> b, std::span<float> out, Isa isa);

// y[i] = exp(x[i]): exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN; vector versions are within
// 2 ulp for normal results (results below FLT_MIN may flush to 0 under AVX2).
void exp_row(std::span<const float> x, std::span<float> y);
void exp_row(std::span<const float> x, std::span<float> y, Isa isa);

}  // namespace lemma::kernels
