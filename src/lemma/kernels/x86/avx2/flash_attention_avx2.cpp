// Flash-attention split kernel with AVX2 + FMA (see flash_attention.h), built like the AVX-512 one:
// per query row and chunk of up to 256 keys, up to 4 query heads of a KV head compute all their
// scores (8 dot products at a time, reduced by one transpose-and-add; masked head_dim tail), then
// one max / exp / sum pass each (the online softmax rescales once per chunk), then their values in
// one pass that loads each value chunk once for all of them; K and V rows are prefetched ahead. Quantized caches are widened to f32 8 elements at
// a time in registers (bf16: shift; int8: sign-extend + convert; fp8: e4m3 bits moved into an f16
// and converted, which is the value / 2^8, so fp8 scales are taken x 2^8).
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/x86/flash_chunks.h"
#include "lemma/kernels/x86/avx2/vector_math_avx2.h"

namespace lemma::kernels::x86 {

namespace {

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
// own vector, in a fixed order, so it does not depend on the other vectors. Inlined so the caller's
// accumulators stay in registers.
[[gnu::always_inline]] inline __m256 transpose_sum(const __m256* a) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  // t0 = [a0..a3 summed over the low 128 bits | a0..a3 over the high 128 bits], t1 likewise.
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

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
// m is tail_mask(hd - d). kFull: the caller knows d + 8 <= hd.
template <KvDtype D, bool kFull = false>
__m256 load8(const char* row, int64_t d, int64_t hd, __m256i m) {
  if constexpr (kFull) {
    return widen8<D>(row + d * kElementBytes<D>);
  } else if constexpr (D == KvDtype::kF32) {
    return _mm256_maskload_ps(reinterpret_cast<const float*>(row) + d, m);
  } else {
    const char* p = row + d * kElementBytes<D>;
    if (hd - d >= 8) return widen8<D>(p);
    if (hd - d <= 0) return _mm256_setzero_ps();
    alignas(16) char tail[8 * kElementBytes<D>] = {};
    std::memcpy(tail, p, static_cast<size_t>((hd - d) * kElementBytes<D>));
    return widen8<D>(tail);
  }
}

// q . k[i] for 8 keys (every k[i] must point at readable keys), scales not applied.
template <KvDtype D>
[[gnu::always_inline]] inline __m256 dots8(const float* q, const char* const* k, int64_t hd) {
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

// Query heads whose values one pass accumulates together: 4 heads x 2 chunks of 8 floats = 8
// accumulators, + 2 value chunks + 1 weight, of 16 registers.
constexpr int kHeadsPerPass = 4;
constexpr int kChunks = 2;

// For heads h < kHeads at once: acc_h[d] = acc_h[d] * alpha_h + sum over keys i < n of
// p_h[i] * v[i][d] (ascending i), over head_dim in blocks of 8 * kChunks floats. Each value chunk
// is loaded once for all heads; per element the operations and their order are those of one head
// alone, so which heads share a pass never changes a bit.
template <KvDtype D, bool kFull, int kHeads>
void accumulate_heads(float* const* acc, const float* const* p, const float* alpha, const char* const* v, int64_t n,
                      int64_t hd) {
  for (int64_t d0 = 0; d0 < hd; d0 += 8 * kChunks) {
    __m256 o[kHeads][kChunks];
    __m256i m[kChunks];
    for (int c = 0; c < kChunks; ++c) m[c] = tail_mask(max64(hd - d0 - 8 * c, 0));
    for (int h = 0; h < kHeads; ++h)
      for (int c = 0; c < kChunks; ++c) {
        o[h][c] = _mm256_maskload_ps(acc[h] + d0 + 8 * c, m[c]);
        if (alpha[h] != 1.0f) o[h][c] = _mm256_mul_ps(o[h][c], _mm256_set1_ps(alpha[h]));
      }
    for (int64_t i = 0; i < n; ++i) {
      __m256 vc[kChunks];
      for (int c = 0; c < kChunks; ++c) vc[c] = load8<D, kFull>(v[i], d0 + 8 * c, hd, m[c]);
      for (int h = 0; h < kHeads; ++h) {
        const __m256 pi = _mm256_broadcast_ss(p[h] + i);
        for (int c = 0; c < kChunks; ++c) o[h][c] = _mm256_fmadd_ps(pi, vc[c], o[h][c]);
      }
    }
    for (int h = 0; h < kHeads; ++h)
      for (int c = 0; c < kChunks; ++c) _mm256_maskstore_ps(acc[h] + d0 + 8 * c, m[c], o[h][c]);
  }
}

template <KvDtype D, bool kFull>
void accumulate_heads(int heads, float* const* acc, const float* const* p, const float* alpha, const char* const* v,
                      int64_t n, int64_t hd) {
  switch (heads) {
    case 1: accumulate_heads<D, kFull, 1>(acc, p, alpha, v, n, hd); break;
    case 2: accumulate_heads<D, kFull, 2>(acc, p, alpha, v, n, hd); break;
    case 3: accumulate_heads<D, kFull, 3>(acc, p, alpha, v, n, hd); break;
    default: accumulate_heads<D, kFull, kHeadsPerPass>(acc, p, alpha, v, n, hd); break;
  }
}

// Lanes with first_key + i in [lo, hi) keep dot * scale, the others become -inf.
__m256 masked_scores(__m256 dots, float scale, int64_t first_key, int64_t lo, int64_t hi) {
  const __m256i key = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first_key)),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i visible = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lo)), key),
                                              _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), key));
  return _mm256_blendv_ps(_mm256_set1_ps(kNegInf), _mm256_mul_ps(dots, _mm256_set1_ps(scale)),
                          _mm256_castsi256_ps(visible));
}

// Scores of 8 keys starting at index i of the n a row sees: dot * scale (* key scales), -inf past n.
template <KvDtype D>
[[gnu::always_inline]] inline __m256 scores8(const FlashSplitArgs& a, const float* q, const ChunkKeys& keys,
                                             int64_t i0, int64_t i, int64_t n) {
  __m256 dots = dots8<D>(q, keys.k + i0 + i, a.head_dim);
  if constexpr (is_scaled(D)) dots = _mm256_mul_ps(dots, _mm256_loadu_ps(keys.k_scale + i0 + i));
  return masked_scores(dots, a.scale, i, 0, n);
}

// One online-softmax step of kHeads query heads (q[h], partial part[h]) over the n keys of a chunk
// they all see (keys.k/v/scales from index i0): every score first, then the chunk's max, the
// weights exp(score - new max) and their sum in one vector pass, then the values, once for all
// heads. A head with no finite score is left unchanged.
template <KvDtype D, bool kFull, int kHeads>
void update_heads(const FlashSplitArgs& a, const float* const* q, float* const* part, const ChunkKeys& keys,
                  int64_t i0, int64_t n, bool first_pass) {
  alignas(32) float s[kHeads][kChunkKeys + kTile];
  float alpha[kHeads];
  float* acc[kHeads];
  const float* p[kHeads];
  int active = 0;
  const int64_t row_bytes = a.head_dim * kElementBytes<D>;
  __m256 vmax[kHeads];
  for (int h = 0; h < kHeads; ++h) vmax[h] = _mm256_set1_ps(kNegInf);
  // Paged rows are 16 short streams per tile that the hardware prefetchers follow poorly: the
  // first pass asks for K and V rows kPrefetchTiles tiles ahead into L2, the next tile's K into L1.
  if (first_pass)
    for (int64_t t = 0; t < kPrefetchTiles * kTile; t += kTile) {
      prefetch_tile<_MM_HINT_T1>(keys.k + i0, t, n, row_bytes);
      prefetch_tile<_MM_HINT_T1>(keys.v + i0, t, n, row_bytes);
    }
  for (int64_t t = 0; t < n; t += kTile) {
    if (first_pass) {
      const int64_t ahead = t + kPrefetchTiles * kTile;  // the first pass already asked for tiles < ahead
      prefetch_tile<_MM_HINT_T1>(keys.k + i0, ahead, n, row_bytes);
      prefetch_tile<_MM_HINT_T1>(keys.v + i0, ahead, n, row_bytes);
      prefetch_tile<_MM_HINT_T0>(keys.k + i0, t + kTile, n, row_bytes);
    }
    for (int h = 0; h < kHeads; ++h) {  // the tile's keys stay in L1 across the heads
      const __m256 lo = scores8<D>(a, q[h], keys, i0, t, n);
      const __m256 hi = t + 8 < n ? scores8<D>(a, q[h], keys, i0, t + 8, n) : _mm256_set1_ps(kNegInf);
      _mm256_store_ps(s[h] + t, lo);
      _mm256_store_ps(s[h] + t + 8, hi);
      vmax[h] = _mm256_max_ps(vmax[h], _mm256_max_ps(lo, hi));
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    const float chunk_max = hmax(vmax[h]);
    if (chunk_max == kNegInf) continue;
    const float m_old = part[h][0], m_new = m_old > chunk_max ? m_old : chunk_max;
    // Rescale only when the max moved (exp(0) = 1 and x * 1 = x exactly, so skipping changes no bit).
    alpha[active] = m_new == m_old ? 1.0f : std::exp(m_old - m_new);  // 0 on the first chunk
    __m256 vsum = _mm256_setzero_ps();
    for (int64_t t = 0; t < n; t += 8) {
      __m256 w = exp8(_mm256_sub_ps(_mm256_load_ps(s[h] + t), _mm256_set1_ps(m_new)));  // masked lanes: 0
      vsum = _mm256_add_ps(vsum, w);
      if constexpr (is_scaled(D)) w = _mm256_mul_ps(w, _mm256_loadu_ps(keys.v_scale + i0 + t));  // value rows' scales
      _mm256_store_ps(s[h] + t, w);
    }
    part[h][0] = m_new;
    part[h][1] = part[h][1] * alpha[active] + hsum(vsum);
    acc[active] = part[h] + 2;
    p[active++] = s[h];
  }
  if (active > 0) accumulate_heads<D, kFull>(active, acc, p, alpha, keys.v + i0, n, a.head_dim);
}

// Every query head of row r over the keys [lo, hi) of a chunk whose gathered keys start at key c0,
// kHeadsPerPass heads at a time. Only the chunk's first row prefetches (later rows find its keys in L2).
template <KvDtype D, bool kFull>
void update_row(const FlashSplitArgs& a, int64_t r, const ChunkKeys& keys, int64_t c0, int64_t lo, int64_t hi,
                bool first_row) {
  const float* q[kHeadsPerPass];
  float* part[kHeadsPerPass];
  for (int64_t g0 = 0; g0 < a.group; g0 += kHeadsPerPass) {
    const int heads = static_cast<int>(min64(kHeadsPerPass, a.group - g0));
    for (int h = 0; h < heads; ++h) {
      q[h] = a.q + r * a.q_row_stride + (g0 + h) * a.head_dim;
      part[h] = a.partial + (r * a.group + g0 + h) * (a.head_dim + 2);
    }
    switch (heads) {
      case 1: update_heads<D, kFull, 1>(a, q, part, keys, lo - c0, hi - lo, first_row && g0 == 0); break;
      case 2: update_heads<D, kFull, 2>(a, q, part, keys, lo - c0, hi - lo, first_row && g0 == 0); break;
      case 3: update_heads<D, kFull, 3>(a, q, part, keys, lo - c0, hi - lo, first_row && g0 == 0); break;
      default: update_heads<D, kFull, kHeadsPerPass>(a, q, part, keys, lo - c0, hi - lo, first_row && g0 == 0); break;
    }
  }
}

// kFull: head_dim is a multiple of 8 * kChunks, so no value load needs a mask.
template <KvDtype D, bool kFull>
void split(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    for (int64_t d = 1; d < stride; ++d) part[d] = 0.0f;
  }
  ChunkKeys keys;
  for_each_chunk_row<D>(a, keys, [&](int64_t r, int64_t g0, int64_t lo, int64_t hi, bool first_row) {
    update_row<D, kFull>(a, r, keys, g0, lo, hi, first_row);
  });
}

template <KvDtype D>
void split(const FlashSplitArgs& a) {
  if (a.head_dim % (8 * kChunks) == 0)
    split<D, true>(a);
  else
    split<D, false>(a);
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
