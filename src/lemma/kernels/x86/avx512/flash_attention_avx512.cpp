// Flash-attention split kernel with AVX-512 (see flash_attention.h): the reference's tiles and
// update order, with the 16 scores of a tile computed at once (16 dot products reduced by one
// transpose-and-add), a 16-lane softmax update and vector exp.
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

// Lane i of the result = sum of the 16 lanes of a[i]; each lane's sum only ever adds values of its
// own vector, in a fixed order, so it does not depend on the other vectors.
__m512 transpose_sum(__m512* a) {
  __m512 pairs[8], quads[4];
  for (int i = 0; i < 8; ++i)  // [a0_0+a0_2, a1_0+a1_2, a0_1+a0_3, a1_1+a1_3] per 128-bit lane
    pairs[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: partial sums of a[4i .. 4i+3]
    const __m512d x = _mm512_castps_pd(pairs[2 * i]), y = _mm512_castps_pd(pairs[2 * i + 1]);
    quads[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  const __m512 h01 = _mm512_add_ps(_mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 h23 = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(h01, h23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(h01, h23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// q . k[i] for the 16 keys of a tile (every k[i] must point at readable keys).
__m512 tile_dots(const float* q, const float* const* k, int64_t hd) {
  __m512 acc[kTile];
  for (auto& x : acc) x = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 16) {
    const __mmask16 m = tail_mask(hd - d);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
    for (int64_t i = 0; i < kTile; ++i) acc[i] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k[i] + d), acc[i]);
  }
  return transpose_sum(acc);
}

// acc[d0 .. d0 + 16 * kChunks) = acc * alpha + sum over keys j in [lo, hi) of p[j - t0] * v[j][d]
// (ascending j; the last chunk masked to head_dim). kChunks accumulators stay in registers so
// their FMA chains overlap; every element sees the same operations in the same order.
template <int kChunks>
void accumulate_block(float* acc, __m512 p, float alpha, const float* const* v, int64_t t0, int64_t lo, int64_t hi,
                      int64_t d0, int64_t hd) {
  __m512 o[kChunks];
  __mmask16 m[kChunks];
  for (int c = 0; c < kChunks; ++c) {
    m[c] = tail_mask(hd - d0 - 16 * c);
    o[c] = _mm512_maskz_loadu_ps(m[c], acc + d0 + 16 * c);
    if (alpha != 1.0f) o[c] = _mm512_mul_ps(o[c], _mm512_set1_ps(alpha));
  }
  for (int64_t j = lo; j < hi; ++j) {
    const __m512 pj = _mm512_permutexvar_ps(_mm512_set1_epi32(static_cast<int>(j - t0)), p);
    const float* vj = v[j - t0] + d0;
    for (int c = 0; c < kChunks; ++c) o[c] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[c], vj + 16 * c), o[c]);
  }
  for (int c = 0; c < kChunks; ++c) _mm512_mask_storeu_ps(acc + d0 + 16 * c, m[c], o[c]);
}

// The value half of the online-softmax update over head_dim, in blocks of up to 128 floats.
void accumulate_values(float* acc, __m512 p, float alpha, const float* const* v, int64_t t0, int64_t lo, int64_t hi,
                       int64_t hd) {
  for (int64_t d0 = 0; d0 < hd; d0 += 128) {
    switch ((min64(hd - d0, 128) + 15) / 16) {
      case 1: accumulate_block<1>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 2: accumulate_block<2>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 3: accumulate_block<3>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 4: accumulate_block<4>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 5: accumulate_block<5>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 6: accumulate_block<6>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 7: accumulate_block<7>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      default: accumulate_block<8>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
    }
  }
}

void update_query(const FlashSplitArgs& a, const float* q, const float* const* k, const float* const* v, int64_t t0,
                  int64_t lo, int64_t hi, float* part) {
  const int64_t hd = a.head_dim;
  alignas(64) float s[kTile];
  const __mmask16 visible = static_cast<__mmask16>(((1u << (hi - t0)) - 1u) & ~((1u << (lo - t0)) - 1u));
  const __m512 scores = _mm512_mask_mul_ps(_mm512_set1_ps(kNegInf), visible, tile_dots(q, k, hd),
                                           _mm512_set1_ps(a.scale));
  const float tile_max = _mm512_reduce_max_ps(scores);
  if (tile_max == kNegInf) return;
  const float m_new = part[0] > tile_max ? part[0] : tile_max;
  // Rescale only when the max moved (exp(0) = 1 and x * 1 = x exactly, so skipping changes no bit).
  const float alpha = m_new == part[0] ? 1.0f : std::exp(part[0] - m_new);  // 0 on the first tile
  _mm512_store_ps(s, _mm512_sub_ps(scores, _mm512_set1_ps(m_new)));
  exp_avx512(s, s, kTile);
  const __m512 p = _mm512_load_ps(s);
  part[0] = m_new;
  part[1] = part[1] * alpha + _mm512_reduce_add_ps(p);
  accumulate_values(part + 2, p, alpha, v, t0, lo, hi, hd);
}

}  // namespace

void flash_split_avx512(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    part[1] = 0.0f;
    for (int64_t d = 0; d < a.head_dim; d += 16)
      _mm512_mask_storeu_ps(part + 2 + d, tail_mask(a.head_dim - d), _mm512_setzero_ps());
  }
  const float* k[kTile];
  const float* v[kTile];
  // Keys before the first row's window are never read: their blocks may already be freed.
  const int64_t first_key =
      max64(a.key_begin, a.sliding_window > 0 ? a.first_position - a.sliding_window + 1 : int64_t{0});
  for (int64_t t0 = first_key / kTile * kTile; t0 < a.key_end; t0 += kTile) {
    const int64_t tile_lo = max64(t0, first_key), tile_hi = min64(t0 + kTile, a.key_end);
    for (int64_t j = tile_lo; j < tile_hi; ++j) {
      const int64_t slot = a.block_table[j / a.block_size] * a.block_size + j % a.block_size;
      k[j - t0] = a.keys + slot * a.token_stride;
      v[j - t0] = a.values + slot * a.token_stride;
    }
    for (int64_t j = t0; j < t0 + kTile; ++j)  // lanes outside the split: any readable key (masked)
      if (j < tile_lo || j >= tile_hi) k[j - t0] = k[tile_lo - t0];
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
