// Test helpers for the bf16x16 kernels: bf16 weights interleaved into 16-row groups in a 64-byte
// aligned buffer (as Model's are: the kernels load whole chunks), and x rounded as the packer rounds.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "matmul_test_util.h"

namespace lemma::kernels::testing {

struct Bf16x16 {
  std::vector<uint8_t> bytes;
  TensorView view;  // into bytes, 64-byte aligned
};

// N rows of K bf16 values (rows K apart) as a bf16x16 matrix.
inline Bf16x16 interleave_bf16(const void* rows, int64_t N, int64_t K) {
  Bf16x16 w;
  w.bytes.resize(interleaved_bytes(DType::kBF16, N, K) + 64);
  auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(w.bytes.data()) + 63) / 64 * 64);
  interleave_rows(DType::kBF16, rows, N, K, aligned);
  w.view = TensorView{aligned, DType::kBF16, Shape{N, K}, RowLayout::kInterleaved16};
  return w;
}

struct RandomBf16x16 : Bf16x16 {
  Weights plain;  // the bf16 rows and their values
};

inline RandomBf16x16 random_bf16x16(int64_t N, int64_t K, std::mt19937& rng) {
  Weights plain = random_weights(DType::kBF16, N, K, rng);
  Bf16x16 w = interleave_bf16(plain.bytes.data(), N, K);
  return RandomBf16x16{std::move(w), std::move(plain)};
}

inline std::vector<float> bf16_rounded(const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = bf16_to_f32(f32_to_bf16(x[i]));
  return r;
}

}  // namespace lemma::kernels::testing
