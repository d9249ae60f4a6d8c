// The flash-attention split kernel (see flash_attention.h) over the vector layer, once per ISA (and
// once more on AVX-512 with AVX512_BF16, whose bf16 caches take q . k by vdpbf16ps:
// x86/avx512bf16/flash_bf16_dots.h). Per query row and chunk of up to 256 keys (flash_chunks.h), up
// to 4 query heads of a KV head compute all their scores (a tile of 16 keys is 16 / kWidth groups of
// kWidth dot products, each reduced by one transpose-and-add), then one max / exp / sum pass each
// (the online softmax rescales once per chunk, not per 16-key tile as the reference does), then
// their values in one pass that loads each value chunk once for all of them; K and V rows are
// prefetched ahead. Quantized caches are widened to f32 in registers (bf16: shift; int8: sign-extend
// + convert; fp8: e4m3 bits moved into an f16 and converted, which is the value / 2^8, so fp8
// scales are taken x 2^8).
#include <cmath>
#include <cstdint>

#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/x86/flash_chunks.h"
#include "lemma/kernels/x86/vec/vec.h"
#if defined(__AVX512BF16__)
#include "lemma/kernels/x86/avx512bf16/flash_bf16_dots.h"
#endif

namespace lemma::kernels::x86 {

namespace {

using F = Vec::F;
constexpr int64_t W = Vec::kWidth;

#if !defined(__AVX512BF16__)
struct Bf16Dots {  // not on this ISA: every bf16 key is widened to f32
  static constexpr bool kEnabled = false;
  static constexpr int64_t kMaxHeadDim = 0;
  static void split_query(const float*, int64_t, uint16_t*, uint16_t*) {}
  template <bool kFull>
  static F tile_dots(const uint16_t*, const uint16_t*, const char* const*, int64_t) { return Vec::zero(); }
};
#endif

// Elements [d, d + min(kWidth, count)) of a stored row, widened to f32 without the scale (the rest
// 0, nothing past them read); count >= 0 and m = Vec::first_lanes_mask(count). kFull: the caller
// knows count >= kWidth.
template <KvDtype D, bool kFull = false>
F load_row(const char* row, int64_t d, int64_t count, Vec::Mask m) {
  const char* p = row + d * kElementBytes<D>;
  const bool full = kFull || count >= W;
  if constexpr (D == KvDtype::kF32) {
    const auto* x = reinterpret_cast<const float*>(p);
    return kFull ? Vec::load(x) : Vec::load_masked(x, m);
  } else if constexpr (D == KvDtype::kBf16) {
    const auto* x = reinterpret_cast<const uint16_t*>(p);
    return full ? Vec::load_bf16(x) : Vec::bf16_to_f32(Vec::load_h_first(x, count));
  } else if constexpr (D == KvDtype::kInt8) {
    const auto* x = reinterpret_cast<const int8_t*>(p);
    return full ? Vec::load_i8(x) : Vec::load_i8_first(x, count);
  } else {
    const auto* x = reinterpret_cast<const uint8_t*>(p);
    return full ? Vec::load_e4m3(x) : Vec::load_e4m3_first(x, count);
  }
}

// q . k[i] for kWidth keys (every k[i] must point at readable keys), scales not applied.
template <KvDtype D>
[[gnu::always_inline]] inline F dots(const float* q, const char* const* k, int64_t hd) {
  F acc[W];
  for (auto& x : acc) x = Vec::zero();
  int64_t d = 0;
  for (; d + W <= hd; d += W) {
    const F qv = Vec::load(q + d);
    for (int i = 0; i < W; ++i) acc[i] = Vec::fmadd(qv, load_row<D, true>(k[i], d, W, Vec::first_lanes_mask(W)), acc[i]);
  }
  if (d < hd) {
    const Vec::Mask m = Vec::first_lanes_mask(hd - d);
    const F qv = Vec::load_masked(q + d, m);
    for (int i = 0; i < W; ++i) acc[i] = Vec::fmadd(qv, load_row<D>(k[i], d, hd - d, m), acc[i]);
  }
  return Vec::reduce_add_each(acc);
}

// Query heads whose values one pass accumulates together: 4 heads x kChunks vectors of head_dim =
// half the register file (AVX2 8 of 16 ymm, AVX-512 16 of 32 zmm), + the value chunks + 1 weight.
constexpr int kHeadsPerPass = 4;
constexpr int kChunks = Vec::kRegisters / (2 * kHeadsPerPass);

// For heads h < kHeads at once: acc_h[d] = acc_h[d] * alpha_h + sum over keys i < n of
// p_h[i] * v[i][d] (ascending i), over head_dim in blocks of kWidth * kChunks floats. Each value chunk
// is loaded once for all heads; per element the operations and their order are those of one head
// alone, so which heads share a pass never changes a bit.
template <KvDtype D, bool kFull, int kHeads>
void accumulate_heads(float* const* acc, const float* const* p, const float* alpha, const char* const* v, int64_t n,
                      int64_t hd) {
  for (int64_t d0 = 0; d0 < hd; d0 += W * kChunks) {
    F o[kHeads][kChunks];
    int64_t count[kChunks];
    Vec::Mask m[kChunks];
    for (int c = 0; c < kChunks; ++c) {
      count[c] = max64(hd - d0 - W * c, 0);
      m[c] = Vec::first_lanes_mask(count[c]);
    }
    for (int h = 0; h < kHeads; ++h)
      for (int c = 0; c < kChunks; ++c) {
        o[h][c] = kFull ? Vec::load(acc[h] + d0 + W * c) : Vec::load_masked(acc[h] + d0 + W * c, m[c]);
        if (alpha[h] != 1.0f) o[h][c] = Vec::mul(o[h][c], Vec::set1(alpha[h]));
      }
    for (int64_t i = 0; i < n; ++i) {
      F vc[kChunks];
      for (int c = 0; c < kChunks; ++c) vc[c] = load_row<D, kFull>(v[i], d0 + W * c, count[c], m[c]);
      for (int h = 0; h < kHeads; ++h) {
        const F pi = Vec::set1(p[h][i]);
        for (int c = 0; c < kChunks; ++c) o[h][c] = Vec::fmadd(pi, vc[c], o[h][c]);
      }
    }
    for (int h = 0; h < kHeads; ++h)
      for (int c = 0; c < kChunks; ++c) {
        if constexpr (kFull) {
          Vec::store(acc[h] + d0 + W * c, o[h][c]);
        } else {
          Vec::store_masked(acc[h] + d0 + W * c, o[h][c], m[c]);
        }
      }
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
// they all see (keys.k/v/scales from index i0): every score first (16 keys per tile), then the
// chunk's max, the weights exp(score - new max) and their sum in one vector pass, then the values,
// once for all heads. A head with no finite score is left unchanged.
template <KvDtype D, bool kFull, int kHeads>
void update_heads(const FlashSplitArgs& a, const float* const* q, float* const* part, const ChunkKeys& keys,
                  int64_t i0, int64_t n, bool first_pass) {
  alignas(64) float s[kHeads][kChunkKeys];
  float alpha[kHeads];
  float* acc[kHeads];
  const float* p[kHeads];
  int active = 0;
  const int64_t row_bytes = a.head_dim * kElementBytes<D>;
  F vmax[kHeads];
  for (int h = 0; h < kHeads; ++h) vmax[h] = Vec::set1(kNegInf);
  constexpr bool kBf16Dots = Bf16Dots::kEnabled && D == KvDtype::kBf16;
  [[maybe_unused]] const bool bf16_dots = kBf16Dots && a.head_dim <= Bf16Dots::kMaxHeadDim;
  [[maybe_unused]] alignas(64) uint16_t q_halves[kBf16Dots ? kHeads : 1][2][kBf16Dots ? Bf16Dots::kMaxHeadDim : 1];
  if constexpr (kBf16Dots)
    if (bf16_dots)
      for (int h = 0; h < kHeads; ++h) Bf16Dots::split_query(q[h], a.head_dim, q_halves[h][0], q_halves[h][1]);
  // The rows of a tile are 16 short streams (paged blocks lie anywhere), which the hardware
  // prefetchers follow poorly. The first pass over the keys asks for the K and V rows
  // kPrefetchTiles tiles ahead into L2 and the next tile's K rows into L1.
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
      F tile_max = Vec::set1(kNegInf);
      for (int part = 0; part < kTile / W; ++part) {  // scores dot * scale (* key scales), -inf past n
        const int64_t j = t + W * part;
        F scores = Vec::set1(kNegInf);
        if (j < n) {
          F products;
          if constexpr (kBf16Dots) {
            products = bf16_dots ? Bf16Dots::tile_dots<kFull>(q_halves[h][0], q_halves[h][1], keys.k + i0 + j, a.head_dim)
                                 : dots<D>(q[h], keys.k + i0 + j, a.head_dim);
          } else {
            products = dots<D>(q[h], keys.k + i0 + j, a.head_dim);
          }
          if constexpr (is_scaled(D)) products = Vec::mul(products, Vec::load(keys.k_scale + i0 + j));
          scores = Vec::select(Vec::first_lanes_mask(n - j), Vec::mul(products, Vec::set1(a.scale)), scores);
        }
        Vec::store_aligned(s[h] + j, scores);
        tile_max = Vec::max(tile_max, scores);  // max(-inf, x) is x, NaN included
      }
      vmax[h] = Vec::max(vmax[h], tile_max);
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    const float chunk_max = Vec::reduce_max(vmax[h]);
    if (chunk_max == kNegInf) continue;
    const float m_old = part[h][0], m_new = m_old > chunk_max ? m_old : chunk_max;
    // Rescale only when the max moved (exp(0) = 1 and x * 1 = x exactly, so skipping changes no bit).
    alpha[active] = m_new == m_old ? 1.0f : std::exp(m_old - m_new);  // 0 on the first chunk
    F vsum = Vec::zero();
    for (int64_t t = 0; t < n; t += W) {
      F w = Vec::exp(Vec::sub(Vec::load_aligned(s[h] + t), Vec::set1(m_new)));  // masked lanes: 0
      vsum = Vec::add(vsum, w);
      if constexpr (is_scaled(D)) w = Vec::mul(w, Vec::load(keys.v_scale + i0 + t));  // value rows' scales
      Vec::store_aligned(s[h] + t, w);
    }
    part[h][0] = m_new;
    part[h][1] = part[h][1] * alpha[active] + Vec::reduce_add(vsum);
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

// kFull: head_dim is a multiple of kWidth * kChunks (64 on both ISAs), so no value load needs a mask.
template <KvDtype D, bool kFull>
void split(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    part[1] = 0.0f;
    for (int64_t d = 0; d < a.head_dim; d += W) Vec::store_first(part + 2 + d, Vec::zero(), a.head_dim - d);
  }
  ChunkKeys keys;
  for_each_chunk_row<D>(a, keys, [&](int64_t r, int64_t g0, int64_t lo, int64_t hi, bool first_row) {
    update_row<D, kFull>(a, r, keys, g0, lo, hi, first_row);
  });
}

template <KvDtype D>
void split(const FlashSplitArgs& a) {
  if (a.head_dim % (W * kChunks) == 0)
    split<D, true>(a);
  else
    split<D, false>(a);
}

}  // namespace

void simd::flash_split(const FlashSplitArgs& a) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: split<KvDtype::kF32>(a); return;
    case KvDtype::kBf16: split<KvDtype::kBf16>(a); return;
    case KvDtype::kInt8: split<KvDtype::kInt8>(a); return;
    case KvDtype::kFp8: split<KvDtype::kFp8>(a); return;
  }
}

}  // namespace lemma::kernels::x86
