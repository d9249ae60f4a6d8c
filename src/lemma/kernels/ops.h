// Elementwise and row ops the model layers need besides matmul (RoPE lives in model/layers).
// Pure functions over caller-owned float spans; no allocation; thread-safe. Sizes must match
// (asserted). Output may alias an input of the same size (in-place use).
#pragma once

#include <span>

namespace lemma::kernels {

// y[i] = (x[i] * r) * weight[i], r = 1 / sqrt(mean(x^2) + eps), the mean accumulated in double.
void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g))  (SwiGLU's gating).
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out);

// y = softmax(x): exp(x - max) / sum, summed in double. Entries of -inf give 0. If every entry is
// -inf the result is all zeros; a NaN anywhere makes every output NaN.
void softmax(std::span<const float> x, std::span<float> y);

// out[i] = a[i] + b[i].
void add(std::span<const float> a, std::span<const float> b, std::span<float> out);

}  // namespace lemma::kernels
