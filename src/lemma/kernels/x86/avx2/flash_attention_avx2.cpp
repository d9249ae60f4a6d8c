// Flash-attention split kernel with AVX2 + FMA (see flash_attention.h): the reference's tiles and
// update order, with the scores of 8 keys at a time (8 dot products reduced by one transpose-and-
// add; masked head_dim tail), vector exp over the 16-key score tile.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "lemma/kernels/attention/flash_attention_isa.h"
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

// q . k[i] for 8 keys (every k[i] must point at readable keys).
__m256 dots8(const float* q, const float* const* k, int64_t hd) {
  __m256 acc[8];
  for (auto& x : acc) x = _mm256_setzero_ps();
  int64_t d = 0;
  for (; d + 8 <= hd; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k[i] + d), acc[i]);
  }
  if (d < hd) {
    const __m256i m = tail_mask(hd - d);
    const __m256 qv = _mm256_maskload_ps(q + d, m);
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k[i] + d, m), acc[i]);
  }
  return transpose_sum(acc);
}

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
template <int kChunks>
void accumulate_block(float* acc, const float* p, float alpha, const float* const* v, int64_t t0, int64_t lo,
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
    const float* vj = v[j - t0] + d0;
    for (int c = 0; c < kChunks; ++c) o[c] = _mm256_fmadd_ps(pj, _mm256_maskload_ps(vj + 8 * c, m[c]), o[c]);
  }
  for (int c = 0; c < kChunks; ++c) _mm256_maskstore_ps(acc + d0 + 8 * c, m[c], o[c]);
}

// The value half of the online-softmax update over head_dim, in blocks of up to 64 floats.
void accumulate_values(float* acc, const float* p, float alpha, const float* const* v, int64_t t0, int64_t lo,
                       int64_t hi, int64_t hd) {
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    switch ((min64(hd - d0, 64) + 7) / 8) {
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
  alignas(32) float s[kTile];
  _mm256_store_ps(s, masked_scores(dots8(q, k, hd), a.scale, t0, lo, hi));
  _mm256_store_ps(s + 8, hi - t0 > 8 ? masked_scores(dots8(q, k + 8, hd), a.scale, t0 + 8, lo, hi)
                                     : _mm256_set1_ps(kNegInf));
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
  accumulate_values(part + 2, s, alpha, v, t0, lo, hi, hd);
}

}  // namespace

void flash_split_avx2(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    for (int64_t d = 1; d < stride; ++d) part[d] = 0.0f;
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
