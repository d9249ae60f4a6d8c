// Flash-attention split kernel with AVX2 + FMA (see flash_attention.h): the reference's tiles and
// update order, with the scores of 8 keys at a time (8 dot products reduced by one transpose-and-
// add; masked head_dim tail), vector exp over the 16-key score tile. Quantized caches are widened
// to f32 8 elements at a time in registers (bf16: shift; int8: sign-extend + convert; fp8: e4m3
// bits moved into an f16 and converted, which is the value / 2^8, so fp8 scales are taken x 2^8).
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kTile = 16;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// Lanes [0, remaining) set.
__m256i tail_mask(int64_t remaining) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(min64(remaining, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

float hsum(__m256 x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmax(__m256 x) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane i of the result = sum of the 8 lanes of a[i]; each lane's sum only ever adds values of its
// own vector, in a fixed order, so it does not depend on the other vectors.
__m256 transpose_sum(const __m256* a) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  // t0 = [a0..a3 summed over the low 128 bits | a0..a3 over the high 128 bits], t1 likewise.
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

constexpr bool is_scaled(KvDtype d) { return d == KvDtype::kInt8 || d == KvDtype::kFp8; }
template <KvDtype D>
constexpr int64_t kElementBytes = D == KvDtype::kF32 ? 4 : D == KvDtype::kBf16 ? 2 : 1;

// 8 stored elements at p (all readable), widened to f32 without the scale.
template <KvDtype D>
__m256 widen8(const char* p) {
  if constexpr (D == KvDtype::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  } else if constexpr (D == KvDtype::kBf16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else if constexpr (D == KvDtype::kInt8) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  } else {  // e4m3 s.eeee.mmm -> f16 s.0eeee.mmm0000000 (subnormals included): value * 2^-8
    const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m128i sign = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8);
    const __m128i rest = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7F)), 7);
    return _mm256_cvtph_ps(_mm_or_si128(sign, rest));
  }
}

// Elements [d, d + min(8, hd - d)) of a stored row (the rest 0; nothing past the row is read);
// m is tail_mask(hd - d).
template <KvDtype D>
__m256 load8(const char* row, int64_t d, int64_t hd, __m256i m) {
  if constexpr (D == KvDtype::kF32) {
    return _mm256_maskload_ps(reinterpret_cast<const float*>(row) + d, m);
  } else {
    const char* p = row + d * kElementBytes<D>;
    if (hd - d >= 8) return widen8<D>(p);
    alignas(16) char tail[8 * kElementBytes<D>] = {};
    std::memcpy(tail, p, static_cast<size_t>((hd - d) * kElementBytes<D>));
    return widen8<D>(tail);
  }
}

// q . k[i] for 8 keys (every k[i] must point at readable keys), scales not applied.
template <KvDtype D>
__m256 dots8(const float* q, const char* const* k, int64_t hd) {
  __m256 acc[8];
  for (auto& x : acc) x = _mm256_setzero_ps();
  int64_t d = 0;
  for (; d + 8 <= hd; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(qv, widen8<D>(k[i] + d * kElementBytes<D>), acc[i]);
  }
  if (d < hd) {
    const __m256i m = tail_mask(hd - d);
    const __m256 qv = _mm256_maskload_ps(q + d, m);
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(qv, load8<D>(k[i], d, hd, m), acc[i]);
  }
  return transpose_sum(acc);
}

// One tile's keys: row pointers and (int8/fp8) the scales the kernel multiplies by.
struct Tile {
  const char* k[kTile];
  const char* v[kTile];
  alignas(32) float k_scale[kTile];
  alignas(32) float v_scale[kTile];
};

// Lanes with t0 + i in [lo, hi) keep dot * scale, the others become -inf.
__m256 masked_scores(__m256 dots, float scale, int64_t first_key, int64_t lo, int64_t hi) {
  const __m256i key = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first_key)),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i visible = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lo)), key),
                                              _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), key));
  return _mm256_blendv_ps(_mm256_set1_ps(kNegInf), _mm256_mul_ps(dots, _mm256_set1_ps(scale)),
                          _mm256_castsi256_ps(visible));
}

// acc[d0 .. d0 + 8 * kChunks) = acc * alpha + sum over keys j in [lo, hi) of p[j - t0] * v[j][d]
// (ascending j; the last chunk masked to head_dim). kChunks accumulators stay in registers so
// their FMA chains overlap; every element sees the same operations in the same order.
template <KvDtype D, int kChunks>
void accumulate_block(float* acc, const float* p, float alpha, const char* const* v, int64_t t0, int64_t lo,
                      int64_t hi, int64_t d0, int64_t hd) {
  __m256 o[kChunks];
  __m256i m[kChunks];
  for (int c = 0; c < kChunks; ++c) {
    m[c] = tail_mask(hd - d0 - 8 * c);
    o[c] = _mm256_maskload_ps(acc + d0 + 8 * c, m[c]);
    if (alpha != 1.0f) o[c] = _mm256_mul_ps(o[c], _mm256_set1_ps(alpha));
  }
  for (int64_t j = lo; j < hi; ++j) {
    const __m256 pj = _mm256_set1_ps(p[j - t0]);
    const char* vj = v[j - t0];
    for (int c = 0; c < kChunks; ++c) o[c] = _mm256_fmadd_ps(pj, load8<D>(vj, d0 + 8 * c, hd, m[c]), o[c]);
  }
  for (int c = 0; c < kChunks; ++c) _mm256_maskstore_ps(acc + d0 + 8 * c, m[c], o[c]);
}

// The value half of the online-softmax update over head_dim, in blocks of up to 64 floats.
template <KvDtype D>
void accumulate_values(float* acc, const float* p, float alpha, const char* const* v, int64_t t0, int64_t lo,
                       int64_t hi, int64_t hd) {
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    switch ((min64(hd - d0, 64) + 7) / 8) {
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
  alignas(32) float s[kTile];
  __m256 dots = dots8<D>(q, tile.k, hd);
  if constexpr (is_scaled(D)) dots = _mm256_mul_ps(dots, _mm256_load_ps(tile.k_scale));
  _mm256_store_ps(s, masked_scores(dots, a.scale, t0, lo, hi));
  if (hi - t0 > 8) {
    dots = dots8<D>(q, tile.k + 8, hd);
    if constexpr (is_scaled(D)) dots = _mm256_mul_ps(dots, _mm256_load_ps(tile.k_scale + 8));
    _mm256_store_ps(s + 8, masked_scores(dots, a.scale, t0 + 8, lo, hi));
  } else {
    _mm256_store_ps(s + 8, _mm256_set1_ps(kNegInf));
  }
  const float tile_max = hmax(_mm256_max_ps(_mm256_load_ps(s), _mm256_load_ps(s + 8)));
  if (tile_max == kNegInf) return;
  const float m_new = part[0] > tile_max ? part[0] : tile_max;
  // Rescale only when the max moved (exp(0) = 1 and x * 1 = x exactly, so skipping changes no bit).
  const float alpha = m_new == part[0] ? 1.0f : std::exp(part[0] - m_new);  // 0 on the first tile
  const __m256 shift = _mm256_set1_ps(m_new);
  _mm256_store_ps(s, _mm256_sub_ps(_mm256_load_ps(s), shift));
  _mm256_store_ps(s + 8, _mm256_sub_ps(_mm256_load_ps(s + 8), shift));
  exp_avx2(s, s, kTile);
  part[0] = m_new;
  part[1] = part[1] * alpha + hsum(_mm256_add_ps(_mm256_load_ps(s), _mm256_load_ps(s + 8)));
  if constexpr (is_scaled(D)) {  // each key's weight carries its value row's scale
    alignas(32) float w[kTile];
    _mm256_store_ps(w, _mm256_mul_ps(_mm256_load_ps(s), _mm256_load_ps(tile.v_scale)));
    _mm256_store_ps(w + 8, _mm256_mul_ps(_mm256_load_ps(s + 8), _mm256_load_ps(tile.v_scale + 8)));
    accumulate_values<D>(part + 2, w, alpha, tile.v, t0, lo, hi, hd);
  } else {
    accumulate_values<D>(part + 2, s, alpha, tile.v, t0, lo, hi, hd);
  }
}

template <KvDtype D>
void split(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    for (int64_t d = 1; d < stride; ++d) part[d] = 0.0f;
  }
  const int64_t row_bytes = a.token_stride * kElementBytes<D>;
  // e4m3 loads give value * 2^-8 (widen8), so the scales take the 2^8 back.
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

void flash_split_avx2(const FlashSplitArgs& a) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: split<KvDtype::kF32>(a); return;
    case KvDtype::kBf16: split<KvDtype::kBf16>(a); return;
    case KvDtype::kInt8: split<KvDtype::kInt8>(a); return;
    case KvDtype::kFp8: split<KvDtype::kFp8>(a); return;
  }
}

}  // namespace lemma::kernels::x86
