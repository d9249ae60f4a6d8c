// Flash-attention split kernel with AVX-512 (see flash_attention.h): the reference's tiles and
// update order, with the 16 scores of a tile computed at once (16 dot products reduced by one
// transpose-and-add), a 16-lane softmax update and vector exp. Quantized caches are widened to f32
// 16 elements at a time in registers (bf16: shift; int8: sign-extend + convert; fp8: e4m3 bits
// moved into an f16 and converted, which is the value / 2^8, so fp8 scales are taken x 2^8).
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/attention/kv_dtype.h"
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

constexpr bool is_scaled(KvDtype d) { return d == KvDtype::kInt8 || d == KvDtype::kFp8; }
template <KvDtype D>
constexpr int64_t kElementBytes = D == KvDtype::kF32 ? 4 : D == KvDtype::kBf16 ? 2 : 1;

// Elements [d, d + 16) of a stored row (lanes outside m are 0 and read nothing), without the scale.
template <KvDtype D>
__m512 load16(const char* row, int64_t d, __mmask16 m) {
  if constexpr (D == KvDtype::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + d);
  } else if constexpr (D == KvDtype::kBf16) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + d);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else if constexpr (D == KvDtype::kInt8) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, row + d)));
  } else {  // e4m3 s.eeee.mmm -> f16 s.0eeee.mmm0000000 (subnormals included): value * 2^-8
    const __m256i b = _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, row + d));
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8);
    const __m256i rest = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7);
    return _mm512_cvtph_ps(_mm256_or_si256(sign, rest));
  }
}

// q . k[i] for the 16 keys of a tile (every k[i] must point at readable keys), scales not applied.
template <KvDtype D>
__m512 tile_dots(const float* q, const char* const* k, int64_t hd) {
  __m512 acc[kTile];
  for (auto& x : acc) x = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 16) {
    const __mmask16 m = tail_mask(hd - d);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
    for (int64_t i = 0; i < kTile; ++i) acc[i] = _mm512_fmadd_ps(qv, load16<D>(k[i], d, m), acc[i]);
  }
  return transpose_sum(acc);
}

// One tile's keys: row pointers and (int8/fp8) the scales the kernel multiplies by.
struct Tile {
  const char* k[kTile];
  const char* v[kTile];
  alignas(64) float k_scale[kTile];
  alignas(64) float v_scale[kTile];
};

// acc[d0 .. d0 + 16 * kChunks) = acc * alpha + sum over keys j in [lo, hi) of p[j - t0] * v[j][d]
// (ascending j; the last chunk masked to head_dim). kChunks accumulators stay in registers so
// their FMA chains overlap; every element sees the same operations in the same order.
template <KvDtype D, int kChunks>
void accumulate_block(float* acc, __m512 p, float alpha, const char* const* v, int64_t t0, int64_t lo, int64_t hi,
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
    const char* vj = v[j - t0];
    for (int c = 0; c < kChunks; ++c) o[c] = _mm512_fmadd_ps(pj, load16<D>(vj, d0 + 16 * c, m[c]), o[c]);
  }
  for (int c = 0; c < kChunks; ++c) _mm512_mask_storeu_ps(acc + d0 + 16 * c, m[c], o[c]);
}

// The value half of the online-softmax update over head_dim, in blocks of up to 128 floats.
template <KvDtype D>
void accumulate_values(float* acc, __m512 p, float alpha, const char* const* v, int64_t t0, int64_t lo, int64_t hi,
                       int64_t hd) {
  for (int64_t d0 = 0; d0 < hd; d0 += 128) {
    switch ((min64(hd - d0, 128) + 15) / 16) {
      case 1: accumulate_block<D, 1>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 2: accumulate_block<D, 2>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 3: accumulate_block<D, 3>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 4: accumulate_block<D, 4>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 5: accumulate_block<D, 5>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 6: accumulate_block<D, 6>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      case 7: accumulate_block<D, 7>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
      default: accumulate_block<D, 8>(acc, p, alpha, v, t0, lo, hi, d0, hd); break;
    }
  }
}

template <KvDtype D>
void update_query(const FlashSplitArgs& a, const float* q, const Tile& tile, int64_t t0, int64_t lo, int64_t hi,
                  float* part) {
  const int64_t hd = a.head_dim;
  alignas(64) float s[kTile];
  const __mmask16 visible = static_cast<__mmask16>(((1u << (hi - t0)) - 1u) & ~((1u << (lo - t0)) - 1u));
  __m512 dots = tile_dots<D>(q, tile.k, hd);
  if constexpr (is_scaled(D)) dots = _mm512_mul_ps(dots, _mm512_load_ps(tile.k_scale));
  const __m512 scores = _mm512_mask_mul_ps(_mm512_set1_ps(kNegInf), visible, dots, _mm512_set1_ps(a.scale));
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
  if constexpr (is_scaled(D))  // each key's weight carries its value row's scale
    accumulate_values<D>(part + 2, _mm512_mul_ps(p, _mm512_load_ps(tile.v_scale)), alpha, tile.v, t0, lo, hi, hd);
  else
    accumulate_values<D>(part + 2, p, alpha, tile.v, t0, lo, hi, hd);
}

template <KvDtype D>
void split(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    part[1] = 0.0f;
    for (int64_t d = 0; d < a.head_dim; d += 16)
      _mm512_mask_storeu_ps(part + 2 + d, tail_mask(a.head_dim - d), _mm512_setzero_ps());
  }
  const int64_t row_bytes = a.token_stride * kElementBytes<D>;
  // e4m3 loads give value * 2^-8 (load16), so the scales take the 2^8 back.
  const float scale_factor = D == KvDtype::kFp8 ? 256.0f : 1.0f;
  Tile tile;
  // Keys before the first row's window are never read: their blocks may already be freed.
  const int64_t first_key =
      max64(a.key_begin, a.sliding_window > 0 ? a.first_position - a.sliding_window + 1 : int64_t{0});
  for (int64_t t0 = first_key / kTile * kTile; t0 < a.key_end; t0 += kTile) {
    const int64_t tile_lo = max64(t0, first_key), tile_hi = min64(t0 + kTile, a.key_end);
    for (int64_t j = tile_lo; j < tile_hi; ++j) {
      const int64_t slot = a.block_table[j / a.block_size] * a.block_size + j % a.block_size;
      tile.k[j - t0] = static_cast<const char*>(a.keys) + slot * row_bytes;
      tile.v[j - t0] = static_cast<const char*>(a.values) + slot * row_bytes;
      if constexpr (is_scaled(D)) {
        tile.k_scale[j - t0] = a.key_scales[slot * a.scale_stride] * scale_factor;
        tile.v_scale[j - t0] = a.value_scales[slot * a.scale_stride] * scale_factor;
      }
    }
    for (int64_t j = t0; j < t0 + kTile; ++j)  // lanes outside the split: any readable key (masked)
      if (j < tile_lo || j >= tile_hi) {
        tile.k[j - t0] = tile.k[tile_lo - t0];
        if constexpr (is_scaled(D)) tile.k_scale[j - t0] = tile.v_scale[j - t0] = 1.0f;  // finite, unused
      }
    for (int64_t r = 0; r < a.num_rows; ++r) {
      const int64_t pos = a.first_position + r;
      const int64_t window_lo = a.sliding_window > 0 ? pos - a.sliding_window + 1 : 0;
      const int64_t lo = max64(tile_lo, window_lo), hi = min64(tile_hi, pos + 1);
      if (lo >= hi) continue;
      for (int64_t g = 0; g < a.group; ++g)
        update_query<D>(a, a.q + r * a.q_row_stride + g * a.head_dim, tile, t0, lo, hi,
                        a.partial + (r * a.group + g) * stride);
    }
  }
}

}  // namespace

void flash_split_avx512(const FlashSplitArgs& a) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: split<KvDtype::kF32>(a); return;
    case KvDtype::kBf16: split<KvDtype::kBf16>(a); return;
    case KvDtype::kInt8: split<KvDtype::kInt8>(a); return;
    case KvDtype::kFp8: split<KvDtype::kFp8>(a); return;
  }
}

}  // namespace lemma::kernels::x86
