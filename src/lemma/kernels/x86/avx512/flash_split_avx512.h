// The AVX-512 flash-attention split kernel as templates, included by two files: the plain AVX-512
// one (x86/avx512/flash_attention_avx512.cpp) and the AVX512_BF16 one
// (x86/avx512bf16/flash_attention_avx512bf16.cpp). They differ only where __AVX512BF16__ is
// defined: with a bf16 cache the AVX512_BF16 build takes q . k with vdpbf16ps (tile_dots_bf16)
// instead of widening every key to f32. Everything is in an anonymous namespace, so neither object
// exports an ISA-flagged copy the linker could pick for the other.
//
// Per query row and chunk of up to 256 keys, up to 4 query heads of a KV head compute all their
// scores (16 keys at a time: 16 dot products reduced by one transpose-and-add), then one max / exp
// / sum pass each (the online softmax rescales once per chunk, not per 16-key tile as the
// reference does), then their values in one pass that loads each value chunk once for all of
// them; K and V rows are prefetched ahead. Quantized caches are widened to f32 16 elements at a
// time in registers (bf16: shift; int8: sign-extend + convert; fp8: e4m3 bits moved into an f16
// and converted, which is the value / 2^8, so fp8 scales are taken x 2^8).
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/x86/flash_chunks.h"
#include "lemma/kernels/x86/avx512/vector_math_avx512.h"

namespace lemma::kernels::x86 {
namespace {

// Lane i of the result = sum of the 16 lanes of a[i]; each lane's sum only ever adds values of its
// own vector, in a fixed order, so it does not depend on the other vectors. Inlined so the caller's
// accumulators stay in registers (an out-of-line call makes it store them on every FMA).
[[gnu::always_inline]] inline __m512 transpose_sum(__m512* a) {
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

// Elements [d, d + 16) of a stored row (lanes outside m are 0 and read nothing), without the scale.
// kFull: m is all ones, so a plain load serves (masked loads cost ~10% of the kernel on Zen 5).
template <KvDtype D, bool kFull>
__m512 load16(const char* row, int64_t d, __mmask16 m) {
  if constexpr (D == KvDtype::kF32) {
    const float* x = reinterpret_cast<const float*>(row) + d;
    return kFull ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(m, x);
  } else if constexpr (D == KvDtype::kBf16) {
    const uint16_t* x = reinterpret_cast<const uint16_t*>(row) + d;
    const __m256i h = kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)) : _mm256_maskz_loadu_epi16(m, x);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else if constexpr (D == KvDtype::kInt8) {
    const __m128i b = kFull ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d)) : _mm_maskz_loadu_epi8(m, row + d);
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
  } else {  // e4m3 s.eeee.mmm -> f16 s.0eeee.mmm0000000 (subnormals included): value * 2^-8
    const __m128i raw = kFull ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d)) : _mm_maskz_loadu_epi8(m, row + d);
    const __m256i b = _mm256_cvtepu8_epi16(raw);
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8);
    const __m256i rest = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7);
    return _mm512_cvtph_ps(_mm256_or_si256(sign, rest));
  }
}

// q . k[i] for the 16 keys of a tile (every k[i] must point at readable keys), scales not applied.
template <KvDtype D, bool kFull>
[[gnu::always_inline]] inline __m512 tile_dots(const float* q, const char* const* k, int64_t hd) {
  __m512 acc[kTile];
  for (auto& x : acc) x = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 16) {
    const __mmask16 m = tail_mask(hd - d);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
    for (int64_t i = 0; i < kTile; ++i) acc[i] = _mm512_fmadd_ps(qv, load16<D, kFull>(k[i], d, m), acc[i]);
  }
  return transpose_sum(acc);
}

#if defined(__AVX512BF16__)
constexpr bool kBf16Dots = true;
#else
constexpr bool kBf16Dots = false;
#endif
// q's two bf16 halves sit on the stack; longer heads widen their keys as the other dtypes do.
constexpr int64_t kMaxBf16DotHeadDim = 512;

#if defined(__AVX512BF16__)
// q = hi + lo with hi = bf16(q) and lo = bf16(q - hi) (round to nearest even), zero-padded to a
// multiple of 32: hi . k + lo . k carries 16 of q's 24 mantissa bits (relative error below 2^-16),
// while every product of two bf16 values is exact in f32.
void split_query_bf16(const float* q, int64_t hd, uint16_t* hi, uint16_t* lo) {
  for (int64_t d = 0; d < hd; d += 32) {
    const __m512 x0 = _mm512_maskz_loadu_ps(tail_mask(hd - d), q + d);
    const __m512 x1 = _mm512_maskz_loadu_ps(tail_mask(max64(hd - d - 16, 0)), q + d + 16);
    const __m512i h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
    const __m512 h0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
    const __m512 h1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
    _mm512_store_si512(hi + d, h);
    _mm512_store_si512(lo + d, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0))));
  }
}

// q . k[i] for the 16 bf16 key rows of a tile by vdpbf16ps, from q's halves (split_query_bf16):
// two instructions per 32 elements in place of two loads, four widening steps and two FMAs.
template <bool kFull>
[[gnu::always_inline]] inline __m512 tile_dots_bf16(const uint16_t* q_hi, const uint16_t* q_lo, const char* const* k,
                                                    int64_t hd) {
  __m512 acc[kTile];
  for (auto& x : acc) x = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 32) {
    const __mmask32 m = hd - d >= 32 ? ~__mmask32{0} : (__mmask32{1} << (hd - d)) - 1;
    const __m512bh qh = reinterpret_cast<__m512bh>(_mm512_load_si512(q_hi + d));
    const __m512bh ql = reinterpret_cast<__m512bh>(_mm512_load_si512(q_lo + d));
    for (int64_t i = 0; i < kTile; ++i) {
      const uint16_t* x = reinterpret_cast<const uint16_t*>(k[i]) + d;
      const __m512bh kv = reinterpret_cast<__m512bh>(kFull ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi16(m, x));
      acc[i] = _mm512_dpbf16_ps(acc[i], kv, ql);
      acc[i] = _mm512_dpbf16_ps(acc[i], kv, qh);
    }
  }
  return transpose_sum(acc);
}
#endif

// Query heads whose values one pass accumulates together: 4 heads x 4 chunks of 16 floats = 16
// accumulators, + 4 value chunks + 1 weight in registers.
constexpr int kHeadsPerPass = 4;
constexpr int kChunks = 4;

// For heads h < kHeads at once: acc_h[d] = acc_h[d] * alpha_h + sum over keys i < n of
// p_h[i] * v[i][d] (ascending i), over head_dim in blocks of 16 * kChunks floats. Each value chunk
// is loaded once for all heads; per element the operations and their order are those of one head
// alone, so which heads share a pass never changes a bit.
template <KvDtype D, bool kFull, int kHeads>
void accumulate_heads(float* const* acc, const float* const* p, const float* alpha, const char* const* v, int64_t n,
                      int64_t hd) {
  for (int64_t d0 = 0; d0 < hd; d0 += 16 * kChunks) {
    __m512 o[kHeads][kChunks];
    __mmask16 m[kChunks];
    for (int c = 0; c < kChunks; ++c) m[c] = tail_mask(max64(hd - d0 - 16 * c, 0));
    for (int h = 0; h < kHeads; ++h)
      for (int c = 0; c < kChunks; ++c) {
        o[h][c] = _mm512_maskz_loadu_ps(m[c], acc[h] + d0 + 16 * c);
        if (alpha[h] != 1.0f) o[h][c] = _mm512_mul_ps(o[h][c], _mm512_set1_ps(alpha[h]));
      }
    for (int64_t i = 0; i < n; ++i) {
      __m512 vc[kChunks];
      for (int c = 0; c < kChunks; ++c) vc[c] = load16<D, kFull>(v[i], d0 + 16 * c, m[c]);
      for (int h = 0; h < kHeads; ++h) {
        const __m512 pi = _mm512_set1_ps(p[h][i]);
        for (int c = 0; c < kChunks; ++c) o[h][c] = _mm512_fmadd_ps(pi, vc[c], o[h][c]);
      }
    }
    for (int h = 0; h < kHeads; ++h)
      for (int c = 0; c < kChunks; ++c) _mm512_mask_storeu_ps(acc[h] + d0 + 16 * c, m[c], o[h][c]);
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

// One online-softmax step of kHeads query heads (q[h], partial part[h]) over the n keys of a chunk
// they all see (keys.k/v/scales from index i0): every score first (16 keys per dot-product tile),
// then the chunk's max, the weights exp(score - new max) and their sum in one vector pass, then
// the values, once for all heads. A head with no finite score is left unchanged.
template <KvDtype D, bool kFull, int kHeads>
void update_heads(const FlashSplitArgs& a, const float* const* q, float* const* part, const ChunkKeys& keys,
                  int64_t i0, int64_t n, bool first_pass) {
  alignas(64) float s[kHeads][kChunkKeys];
  float alpha[kHeads];
  float* acc[kHeads];
  const float* p[kHeads];
  int active = 0;
  const int64_t row_bytes = a.head_dim * kElementBytes<D>;
  __m512 vmax[kHeads];
  for (int h = 0; h < kHeads; ++h) vmax[h] = _mm512_set1_ps(kNegInf);
  constexpr bool kDots = kBf16Dots && D == KvDtype::kBf16;
  [[maybe_unused]] const bool bf16_dots = kDots && a.head_dim <= kMaxBf16DotHeadDim;
  [[maybe_unused]] alignas(64) uint16_t q_halves[kDots ? kHeads : 1][2][kDots ? kMaxBf16DotHeadDim : 1];
#if defined(__AVX512BF16__)
  if constexpr (kDots)
    if (bf16_dots)
      for (int h = 0; h < kHeads; ++h) split_query_bf16(q[h], a.head_dim, q_halves[h][0], q_halves[h][1]);
#endif
  // The rows of a tile are 16 short streams (paged blocks lie anywhere), which the hardware
  // prefetchers follow poorly. The first pass over the keys asks for the K and V rows
  // kPrefetchTiles tiles ahead into L2 and the next tile's K rows into L1 (one tile ahead into L2
  // and none at all were 15-25% slower on a cache that comes from DRAM).
  if (first_pass)
    for (int64_t t = 0; t < kPrefetchTiles * kTile; t += kTile) {
      prefetch_tile<_MM_HINT_T1>(keys.k + i0, t, n, row_bytes);
      prefetch_tile<_MM_HINT_T1>(keys.v + i0, t, n, row_bytes);
    }
  for (int64_t t = 0; t < n; t += kTile) {
    if (first_pass) {
      const int64_t ahead = t + kPrefetchTiles * kTile;  // its first pass already asked for tiles < ahead
      prefetch_tile<_MM_HINT_T1>(keys.k + i0, ahead, n, row_bytes);
      prefetch_tile<_MM_HINT_T1>(keys.v + i0, ahead, n, row_bytes);
      prefetch_tile<_MM_HINT_T0>(keys.k + i0, t + kTile, n, row_bytes);
    }
    for (int h = 0; h < kHeads; ++h) {  // the tile's keys stay in L1 across the heads
      __m512 dots;
#if defined(__AVX512BF16__)
      if constexpr (kDots)
        dots = bf16_dots ? tile_dots_bf16<kFull>(q_halves[h][0], q_halves[h][1], keys.k + i0 + t, a.head_dim)
                         : tile_dots<D, kFull>(q[h], keys.k + i0 + t, a.head_dim);
      else
#endif
        dots = tile_dots<D, kFull>(q[h], keys.k + i0 + t, a.head_dim);
      if constexpr (is_scaled(D)) dots = _mm512_mul_ps(dots, _mm512_loadu_ps(keys.k_scale + i0 + t));
      const __m512 scores = _mm512_mask_mul_ps(_mm512_set1_ps(kNegInf), tail_mask(n - t), dots, _mm512_set1_ps(a.scale));
      _mm512_store_ps(s[h] + t, scores);
      vmax[h] = _mm512_max_ps(vmax[h], scores);
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    const float chunk_max = _mm512_reduce_max_ps(vmax[h]);
    if (chunk_max == kNegInf) continue;
    const float m_old = part[h][0], m_new = m_old > chunk_max ? m_old : chunk_max;
    // Rescale only when the max moved (exp(0) = 1 and x * 1 = x exactly, so skipping changes no bit).
    alpha[active] = m_new == m_old ? 1.0f : std::exp(m_old - m_new);  // 0 on the first chunk
    __m512 vsum = _mm512_setzero_ps();
    for (int64_t t = 0; t < n; t += kTile) {
      __m512 w = exp16(_mm512_sub_ps(_mm512_load_ps(s[h] + t), _mm512_set1_ps(m_new)));  // masked lanes: 0
      vsum = _mm512_add_ps(vsum, w);
      if constexpr (is_scaled(D)) w = _mm512_mul_ps(w, _mm512_loadu_ps(keys.v_scale + i0 + t));  // value rows' scales
      _mm512_store_ps(s[h] + t, w);
    }
    part[h][0] = m_new;
    part[h][1] = part[h][1] * alpha[active] + _mm512_reduce_add_ps(vsum);
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

// kFull: head_dim is a multiple of 16 * kChunks (64, 128, 256), so no load needs a mask.
template <KvDtype D, bool kFull>
void split(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    part[1] = 0.0f;
    for (int64_t d = 0; d < a.head_dim; d += 16)
      _mm512_mask_storeu_ps(part + 2 + d, tail_mask(a.head_dim - d), _mm512_setzero_ps());
  }
  ChunkKeys keys;
  for_each_chunk_row<D>(a, keys, [&](int64_t r, int64_t g0, int64_t lo, int64_t hi, bool first_row) {
    update_row<D, kFull>(a, r, keys, g0, lo, hi, first_row);
  });
}

template <KvDtype D>
void split(const FlashSplitArgs& a) {
  if (a.head_dim % (16 * kChunks) == 0)
    split<D, true>(a);
  else
    split<D, false>(a);
}

void flash_split_all_dtypes(const FlashSplitArgs& a) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: split<KvDtype::kF32>(a); return;
    case KvDtype::kBf16: split<KvDtype::kBf16>(a); return;
    case KvDtype::kInt8: split<KvDtype::kInt8>(a); return;
    case KvDtype::kFp8: split<KvDtype::kFp8>(a); return;
  }
}

}  // namespace
}  // namespace lemma::kernels::x86
