// Flash-attention split kernel with AVX-512 (see flash_attention.h): the reference's tiles and
// update order, with 16-wide dot products, a 16-lane score vector per tile and vector exp.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kTile = 16;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

__mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << remaining) - 1u);
}

int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

float dot(const float* q, const float* k, int64_t hd) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 16) {
    const __mmask16 m = tail_mask(hd - d);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, k + d), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

void update_query(const FlashSplitArgs& a, const float* q, const float* const* k, const float* const* v, int64_t t0,
                  int64_t lo, int64_t hi, float* part) {
  const int64_t hd = a.head_dim;
  alignas(64) float s[kTile];
  _mm512_store_ps(s, _mm512_set1_ps(kNegInf));
  for (int64_t j = lo; j < hi; ++j) s[j - t0] = dot(q, k[j - t0], hd) * a.scale;
  const float tile_max = _mm512_reduce_max_ps(_mm512_load_ps(s));
  if (tile_max == kNegInf) return;
  const float m_new = part[0] > tile_max ? part[0] : tile_max;
  const float alpha = std::exp(part[0] - m_new);
  _mm512_store_ps(s, _mm512_sub_ps(_mm512_load_ps(s), _mm512_set1_ps(m_new)));
  exp_avx512(s, s, kTile);
  part[0] = m_new;
  part[1] = part[1] * alpha + _mm512_reduce_add_ps(_mm512_load_ps(s));
  float* acc = part + 2;
  const __m512 alpha_v = _mm512_set1_ps(alpha);
  for (int64_t d = 0; d < hd; d += 16) {
    const __mmask16 m = tail_mask(hd - d);
    __m512 o = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, acc + d), alpha_v);
    for (int64_t j = lo; j < hi; ++j)
      o = _mm512_fmadd_ps(_mm512_set1_ps(s[j - t0]), _mm512_maskz_loadu_ps(m, v[j - t0] + d), o);
    _mm512_mask_storeu_ps(acc + d, m, o);
  }
}

}  // namespace

void flash_split_avx512(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    part[1] = 0.0f;
    for (int64_t d = 0; d < a.head_dim; d += 16) _mm512_mask_storeu_ps(part + 2 + d, tail_mask(a.head_dim - d), _mm512_setzero_ps());
  }
  const float* k[kTile];
  const float* v[kTile];
  for (int64_t t0 = a.key_begin / kTile * kTile; t0 < a.key_end; t0 += kTile) {
    const int64_t tile_lo = max64(t0, a.key_begin), tile_hi = min64(t0 + kTile, a.key_end);
    for (int64_t j = tile_lo; j < tile_hi; ++j) {
      const int64_t slot = a.block_table[j / a.block_size] * a.block_size + j % a.block_size;
      k[j - t0] = a.keys + slot * a.token_stride;
      v[j - t0] = a.values + slot * a.token_stride;
    }
    for (int64_t r = 0; r < a.num_rows; ++r) {
      const int64_t pos = a.first_position + r;
      const int64_t window_lo = a.sliding_window > 0 ? pos - a.sliding_window + 1 : 0;
      const int64_t lo = max64(tile_lo, window_lo), hi = min64(tile_hi, pos + 1);
      if (lo >= hi) continue;
      for (int64_t g = 0; g < a.group; ++g)
        update_query(a, a.q + r * a.q_row_stride + g * a.head_dim, k, v, t0, lo, hi,
                     a.partial + (r * a.group + g) * stride);
    }
  }
}

}  // namespace lemma::kernels::x86
