// The ISA-independent half of the AVX2 and AVX-512 flash split kernels: a call's keys cut into
// chunks of up to 256 (at key_begin + k * 256, whatever the rows), each chunk's row pointers and
// scales gathered through the block table, the rows that see each chunk, and the prefetch of rows
// ahead. Only the per-ISA kernel files include this; everything is in an anonymous namespace, so
// no object exports an ISA-flagged copy the linker could pick for other callers.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/attention/kv_dtype.h"

namespace lemma::kernels::x86 {
namespace {

constexpr int64_t kTile = 16;        // keys per tile of scores
constexpr int64_t kChunkKeys = 256;  // keys per chunk (the model's splits are one chunk each)
constexpr int64_t kPrefetchTiles = 4;  // how far ahead (in tiles) K and V rows are asked into L2
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

[[maybe_unused]] int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
[[maybe_unused]] int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr bool is_scaled(KvDtype d) { return d == KvDtype::kInt8 || d == KvDtype::kFp8; }
template <KvDtype D>
constexpr int64_t kElementBytes = D == KvDtype::kF32 ? 4 : D == KvDtype::kBf16 ? 2 : 1;

// The keys of one chunk: row pointers and (int8/fp8) the scales the kernel multiplies by. Entries
// past the chunk's end point at its first key (readable; their lanes are masked).
struct ChunkKeys {
  const char* k[kChunkKeys + kTile];
  const char* v[kChunkKeys + kTile];
  float k_scale[kChunkKeys + kTile];
  float v_scale[kChunkKeys + kTile];
};

template <KvDtype D>
void gather_keys(const FlashSplitArgs& a, int64_t begin, int64_t end, ChunkKeys& keys) {
  const int64_t slot_bytes = a.token_stride * kElementBytes<D>;
  // The kernels widen e4m3 to value * 2^-8, so the scales take the 2^8 back.
  const float scale_factor = D == KvDtype::kFp8 ? 256.0f : 1.0f;
  int64_t block = begin / a.block_size, offset = begin % a.block_size;
  for (int64_t i = 0; i < end - begin; ++i) {
    const int64_t slot = a.block_table[block] * a.block_size + offset;
    if (++offset == a.block_size) offset = 0, ++block;
    keys.k[i] = static_cast<const char*>(a.keys) + slot * slot_bytes;
    keys.v[i] = static_cast<const char*>(a.values) + slot * slot_bytes;
    if constexpr (is_scaled(D)) {
      keys.k_scale[i] = a.key_scales[slot * a.scale_stride] * scale_factor;
      keys.v_scale[i] = a.value_scales[slot * a.scale_stride] * scale_factor;
    }
  }
  for (int64_t i = end - begin; i < end - begin + kTile; ++i) {
    keys.k[i] = keys.v[i] = keys.k[0];
    keys.k_scale[i] = keys.v_scale[i] = 1.0f;  // finite, unused
  }
}

// Starts loading rows[begin .. min(begin + kTile, n)) (row_bytes each) into L1 (kHint =
// _MM_HINT_T0) or L2 (_MM_HINT_T1).
template <int kHint>
void prefetch_tile(const char* const* rows, int64_t begin, int64_t n, int64_t row_bytes) {
  for (int64_t i = begin; i < min64(begin + kTile, n); ++i)
    for (int64_t b = 0; b < row_bytes; b += 64) _mm_prefetch(rows[i] + b, static_cast<_mm_hint>(kHint));
}

// For every chunk of the call and every row that sees some of it: gathers the chunk's keys from
// its first readable one (g0) into `keys`, then calls update(r, g0, lo, hi, first_row) for row r's
// keys [lo, hi); first_row is true for the first such row of the chunk. Chunks start at
// key_begin + k * kChunkKeys whatever the rows are, so how a row's keys are cut (and so its
// rounding) never depends on the other rows of the call. Keys before the first row's window are
// never read: their blocks may already be freed.
template <KvDtype D, typename Update>
void for_each_chunk_row(const FlashSplitArgs& a, ChunkKeys& keys, Update&& update) {
  const int64_t first_key =
      max64(a.key_begin, a.sliding_window > 0 ? a.first_position - a.sliding_window + 1 : int64_t{0});
  for (int64_t c0 = a.key_begin + (first_key - a.key_begin) / kChunkKeys * kChunkKeys; c0 < a.key_end;
       c0 += kChunkKeys) {
    const int64_t g0 = max64(c0, first_key), c1 = min64(c0 + kChunkKeys, a.key_end);  // keys read: [g0, c1)
    gather_keys<D>(a, g0, c1, keys);
    bool first_row = true;
    for (int64_t r = 0; r < a.num_rows; ++r) {
      const int64_t pos = a.first_position + r;
      const int64_t window_lo = a.sliding_window > 0 ? pos - a.sliding_window + 1 : 0;
      const int64_t lo = max64(g0, window_lo), hi = min64(c1, pos + 1);
      if (lo >= hi) continue;
      update(r, g0, lo, hi, first_row);
      first_row = false;
    }
  }
}

}  // namespace
}  // namespace lemma::kernels::x86
