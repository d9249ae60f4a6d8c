// How a matmul treats its activations x (the weights' dtype is the other half of a kernel's key).
#pragma once

#include <cstdint>

namespace lemma::kernels {

enum class MatmulPrecision : uint8_t {
  kF32Activations,   // x stays f32, weights widened to f32, f32 FMA accumulation
  kBf16Activations,  // x rounded to bf16 (vdpbf16ps); bf16 weights with AVX512_BF16, and bf16x16
  kInt8Activations,  // x quantised to int8 as llama.cpp's vec_dot_type does: per 32-value block
                     // for Q8_0/Q4_0/Q5_0 weights (int8_activations.h), per 256-value block with
                     // code sums for the K-quants Q2_K..Q6_K (q8k_activations.h), and the
                     // interleaved forms' signed layouts (interleaved_blocks.h)
};
inline constexpr int kNumMatmulPrecisions = 3;

}  // namespace lemma::kernels
