// Pieces the int8-activation oracles share (int8_activations.cpp, q8k_activations.cpp,
// interleaved_int8.cpp): the walk over every output with its bias, the interleaved weights' per-block
// walk, the 8-lane sum tree, and the activation quantisers' block walk. Included only by reference
// sources (all compiled with the same baseline flags, so one inline copy serves them all).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels::oracle {

// y[m, n] = output(m, n) (+ bias[n]) for every output, rows of x outer.
template <class Output>
void for_each_output(const MatmulArgs& a, Output&& output) {
  for (int64_t m = 0; m < a.M; ++m) {
    for (int64_t n = 0; n < a.N; ++n) {
      const float y = output(m, n);
      a.y[m * a.y_stride + n] = a.bias != nullptr ? y + a.bias[n] : y;
    }
  }
}

// Interleaved W (interleaved_blocks.h), group_bytes per 16-row group: per output one f32 accumulator
// from +0, then for each of x's `blocks` blocks in order acc = block(acc, group, i, m, b), group =
// the group holding row n of W, i = n's row in it.
template <class Block>
void for_each_group_block(const MatmulArgs& a, int64_t blocks, int64_t group_bytes, Block&& block) {
  for_each_output(a, [&](int64_t m, int64_t n) {
    const auto* group = static_cast<const uint8_t*>(a.w) + n / kInterleaveRows * group_bytes;
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) acc = block(acc, group, n % kInterleaveRows, m, b);
    return acc;
  });
}

// acc[0] + ... + acc[7] in the order the kernels' reduce8 adds them.
inline float tree_sum8(const float (&acc)[8]) {
  float s4[4], s2[2];
  for (int i = 0; i < 4; ++i) s4[i] = acc[i] + acc[i + 4];
  for (int i = 0; i < 2; ++i) s2[i] = s4[i] + s4[i + 2];
  return s2[0] + s2[1];
}

// A block of x quantised to codes q = round(x * id) in [-127, 127] (NaN to 0), id = 127 / amax (0
// for an all-zero block; inf for a subnormal amax). has_nan: the block holds a NaN, which makes its
// scale NaN, so every output that reads it is NaN.
struct QuantisedBlock {
  float amax = 0.0f;  // the largest |x|, NaN ignored (std::max keeps its first argument)
  float id = 0.0f;
  bool has_nan = false;
};
inline QuantisedBlock quantise_block(const float* x, int n, int8_t* q) {
  QuantisedBlock r;
  for (int j = 0; j < n; ++j) {
    r.amax = std::max(r.amax, std::fabs(x[j]));
    r.has_nan = r.has_nan || std::isnan(x[j]);
  }
  r.id = r.amax != 0.0f ? 127.0f / r.amax : 0.0f;
  for (int j = 0; j < n; ++j) {
    float v = x[j] * r.id;
    if (std::isnan(v)) v = 0.0f;
    q[j] = static_cast<int8_t>(std::nearbyint(std::min(std::max(v, -127.0f), 127.0f)));
  }
  return r;
}

// store(m, b, codes, block) for every whole block b (kBlock values) of every row m of x, quantised
// by quantise_block; rows of x outer.
template <int kBlock, class Store>
void quantise_blocks(const float* x, int64_t x_stride, int64_t M, int64_t K, Store&& store) {
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t b = 0; b < K / kBlock; ++b) {
      int8_t q[kBlock];
      const QuantisedBlock block = quantise_block(x + m * x_stride + b * kBlock, kBlock, q);
      store(m, b, q, block);
    }
  }
}

}  // namespace lemma::kernels::oracle
