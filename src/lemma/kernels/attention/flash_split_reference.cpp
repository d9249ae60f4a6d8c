// Scalar flash-attention split kernel: the oracle the vector versions mirror (same tiles, same
// masking, same update order; only the arithmetic inside a tile is vectorised there). Quantized
// caches are read element by element: score = (q . codes) * key scale * scale, and the value
// update adds (p * value scale) * codes, so a scale costs one multiply per key.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/attention/kv_quant.h"
#include "lemma/kernels/float_bits.h"

namespace lemma::kernels {

namespace {

constexpr int64_t kTile = 16;  // keys per tile, tiles start at absolute multiples of 16
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Element d of a stored row, without the row's scale.
template <KvDtype D>
float element(const void* row, int64_t d) {
  if constexpr (D == KvDtype::kF32) return static_cast<const float*>(row)[d];
  if constexpr (D == KvDtype::kBf16) return bf16_to_f32(static_cast<const uint16_t*>(row)[d]);
  if constexpr (D == KvDtype::kInt8) return static_cast<float>(static_cast<const int8_t*>(row)[d]);
  if constexpr (D == KvDtype::kFp8) return e4m3_to_float(static_cast<const uint8_t*>(row)[d]);
}

// One tile's keys: row pointers (bytes) and, for int8/fp8, their scales.
struct Tile {
  const char* k[kTile];
  const char* v[kTile];
  float k_scale[kTile];
  float v_scale[kTile];
};

// One query's online-softmax update with the visible keys [lo, hi) of the tile starting at t0.
template <KvDtype D>
void update_query(const FlashSplitArgs& a, const float* q, const Tile& tile, int64_t t0, int64_t lo, int64_t hi,
                  float* part) {
  constexpr bool kScaled = D == KvDtype::kInt8 || D == KvDtype::kFp8;
  const int64_t hd = a.head_dim;
  float s[kTile];
  std::fill(s, s + kTile, kNegInf);
  float tile_max = kNegInf;
  for (int64_t j = lo; j < hi; ++j) {
    const char* kj = tile.k[j - t0];
    float dot = 0.0f;
    for (int64_t d = 0; d < hd; ++d) dot += q[d] * element<D>(kj, d);
    if constexpr (kScaled) dot *= tile.k_scale[j - t0];
    s[j - t0] = dot * a.scale;
    tile_max = std::max(tile_max, s[j - t0]);
  }
  if (tile_max == kNegInf) return;
  const float m_new = std::max(part[0], tile_max);
  // Rescale only when the max moved (exp(0) = 1 and x * 1 = x exactly, so skipping changes no bit).
  const float alpha = m_new == part[0] ? 1.0f : std::exp(part[0] - m_new);  // 0 on the first tile
  float sum = 0.0f;
  for (float& x : s) {
    x = std::exp(x - m_new);
    sum += x;
  }
  part[0] = m_new;
  part[1] = part[1] * alpha + sum;
  float* acc = part + 2;
  if (alpha != 1.0f)
    for (int64_t d = 0; d < hd; ++d) acc[d] *= alpha;
  for (int64_t j = lo; j < hi; ++j) {
    float p = s[j - t0];
    if constexpr (kScaled) p *= tile.v_scale[j - t0];
    const char* vj = tile.v[j - t0];
    for (int64_t d = 0; d < hd; ++d) acc[d] += p * element<D>(vj, d);
  }
}

template <KvDtype D>
void split(const FlashSplitArgs& a) {
  const int64_t stride = a.head_dim + 2, queries = a.num_rows * a.group;
  for (int64_t i = 0; i < queries; ++i) {
    float* part = a.partial + i * stride;
    part[0] = kNegInf;
    std::fill(part + 1, part + stride, 0.0f);
  }
  const int64_t row_bytes = a.token_stride * kv_element_bytes(D);
  Tile tile{};
  // Keys before the first row's window are never read: their blocks may already be freed.
  const int64_t first_key =
      std::max(a.key_begin, a.sliding_window > 0 ? a.first_position - a.sliding_window + 1 : int64_t{0});
  for (int64_t t0 = first_key / kTile * kTile; t0 < a.key_end; t0 += kTile) {
    const int64_t tile_lo = std::max(t0, first_key), tile_hi = std::min(t0 + kTile, a.key_end);
    for (int64_t j = tile_lo; j < tile_hi; ++j) {
      const int64_t slot = a.block_table[j / a.block_size] * a.block_size + j % a.block_size;
      tile.k[j - t0] = static_cast<const char*>(a.keys) + slot * row_bytes;
      tile.v[j - t0] = static_cast<const char*>(a.values) + slot * row_bytes;
      if constexpr (D == KvDtype::kInt8 || D == KvDtype::kFp8) {
        tile.k_scale[j - t0] = a.key_scales[slot * a.scale_stride];
        tile.v_scale[j - t0] = a.value_scales[slot * a.scale_stride];
      }
    }
    for (int64_t r = 0; r < a.num_rows; ++r) {
      const int64_t pos = a.first_position + r;
      const int64_t window_lo = a.sliding_window > 0 ? pos - a.sliding_window + 1 : 0;
      const int64_t lo = std::max(tile_lo, window_lo), hi = std::min(tile_hi, pos + 1);
      if (lo >= hi) continue;
      for (int64_t g = 0; g < a.group; ++g)
        update_query<D>(a, a.q + r * a.q_row_stride + g * a.head_dim, tile, t0, lo, hi,
                        a.partial + (r * a.group + g) * stride);
    }
  }
}

}  // namespace

void flash_split_reference(const FlashSplitArgs& a) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: split<KvDtype::kF32>(a); return;
    case KvDtype::kBf16: split<KvDtype::kBf16>(a); return;
    case KvDtype::kInt8: split<KvDtype::kInt8>(a); return;
    case KvDtype::kFp8: split<KvDtype::kFp8>(a); return;
  }
}

}  // namespace lemma::kernels
