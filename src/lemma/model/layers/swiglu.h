// SwiGLU activation of the MLP: out = silu(gate) * up, silu(x) = x / (1 + e^-x). Pure; thread-safe.
#pragma once

#include <cmath>
#include <span>

namespace lemma::layers {

// gate, up, out: same length (out may alias gate).
inline void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace lemma::layers
