// FP8 (e4m3fn) weights as Hugging Face "fp8" checkpoints hold them: a Linear weight [N, K] stored as
// F8_E4M3 codes plus either one f32 `weight_scale` for the tensor, or (DeepSeek-V3 style,
// weight_block_size [128, 128]) an f32 `weight_scale_inv` [ceil(N / 128), ceil(K / 128)], one per
// 128x128 tile (edge tiles partial). value = e4m3(code) * scale — "scale_inv" is, despite its name,
// the multiplier. lemma serves them as bf16 (each value rounded once, to nearest even), since
// no kernel reads fp8 weights yet. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lemma/tensor/tensor_view.h"

namespace lemma::quant {

// e4m3fn: bias 7, no infinities, 0x7F / 0xFF NaN, largest finite 448.
float e4m3_to_f32(uint8_t code);
// Round to nearest even, saturating to +-448 (NaN -> 0x7F).
uint8_t f32_to_e4m3(float value);

struct Fp8Weight {
  int64_t rows = 0, cols = 0;   // N, K
  int64_t block = 0;            // 0: one scale for the tensor; else block x block tiles
  std::vector<uint8_t> codes;   // [N, K]
  std::vector<float> scales;    // [1] or [ceil(N / block), ceil(K / block)]
  int64_t block_rows() const { return block == 0 ? 1 : (rows + block - 1) / block; }
  int64_t block_cols() const { return block == 0 ? 1 : (cols + block - 1) / block; }
  float scale_at(int64_t n, int64_t k) const {
    return block == 0 ? scales[0] : scales[static_cast<size_t>((n / block) * block_cols() + k / block)];
  }
};

// scale = max|x| / 448 over the tensor or tile (1 when that is 0), codes = e4m3(x / scale).
Fp8Weight quantize_fp8(std::span<const float> values, int64_t rows, int64_t cols, int64_t block);
// The exact f32 products e4m3(code) * scale, [N, K].
std::vector<float> dequantize_fp8(const Fp8Weight& weight);
// The bf16 bits lemma runs (dequantize_fp8 rounded to nearest even).
std::vector<uint16_t> fp8_to_bf16(const Fp8Weight& weight);

// Reads `<base>.weight` (F8_E4M3, or I8 with the same bytes in a GGUF container) with its
// `<base>.weight_scale` (block 0: F32 [] or [1]) or `<base>.weight_scale_inv` (F32 tiles);
// throws FormatError naming the tensor for wrong dtypes or shapes.
Fp8Weight read_fp8(const std::string& base, const TensorView& weight, const TensorView& scale, int64_t block);

}  // namespace lemma::quant
