// KvCache storage for every KV dtype (G23): bytes per token, layers and K/V/scales kept apart,
// whole-block copies (swap, copy-on-write) that carry the scales, and the errors of a bad copy.
#include "lemma/model/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/kernels/attention/kv_quant.h"

namespace lemma {
namespace {

constexpr KvDtype kDtypes[] = {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8};

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

// The decoded row of (slot, head) of one layer's K (or V).
std::vector<float> read_row(const KvLayerView& v, int64_t slot, int64_t head, bool keys) {
  const int64_t row = slot * v.num_kv_heads + head, esize = kernels::kv_element_bytes(v.dtype);
  const float* scales = keys ? v.key_scales : v.value_scales;
  std::vector<float> out(static_cast<size_t>(v.head_dim));
  kernels::kv_decode_row(v.dtype, static_cast<const char*>(keys ? v.keys : v.values) + row * v.head_dim * esize,
                         scales != nullptr ? scales[row] : 1.0f, v.head_dim, out.data());
  return out;
}

TEST(KvCache, BytesPerTokenFollowTheDtype) {
  // 2 (K, V) x layers x kv heads x (head_dim x element bytes + a 4-byte scale for int8/fp8).
  EXPECT_EQ(KvCache::kv_cache_bytes_per_token(24, 2, 64, KvDtype::kF32), 2u * 24 * 2 * 256);
  EXPECT_EQ(KvCache::kv_cache_bytes_per_token(24, 2, 64, KvDtype::kBf16), 2u * 24 * 2 * 128);
  EXPECT_EQ(KvCache::kv_cache_bytes_per_token(24, 2, 64, KvDtype::kInt8), 2u * 24 * 2 * 68);
  EXPECT_EQ(KvCache::kv_cache_bytes_per_token(24, 2, 64, KvDtype::kFp8), 2u * 24 * 2 * 68);
  for (KvDtype d : kDtypes) {
    const KvCache cache(3, 5, 4, 2, 24, d);
    EXPECT_EQ(cache.dtype(), d);
    EXPECT_EQ(cache.bytes(), 5u * 4 * KvCache::kv_cache_bytes_per_token(3, 2, 24, d)) << kernels::kv_dtype_name(d);
  }
}

TEST(KvCache, WritesLandInTheirOwnLayerSlotAndHead) {
  for (KvDtype d : kDtypes) {
    const int64_t layers = 2, blocks = 3, bs = 4, heads = 2, hd = 12;
    KvCache cache(layers, blocks, bs, heads, hd, d);
    std::vector<std::vector<float>> written;
    uint32_t seed = 1;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t slot = 0; slot < blocks * bs; ++slot) {
        const auto k = random_row(heads * hd, seed++), v = random_row(heads * hd, seed++);
        write_kv_slot(cache.layer(l), slot, k.data(), v.data());
        written.push_back(k);
        written.push_back(v);
      }
    size_t i = 0;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t slot = 0; slot < blocks * bs; ++slot, i += 2)
        for (int64_t h = 0; h < heads; ++h)
          for (int kv = 0; kv < 2; ++kv) {
            const auto got = read_row(cache.layer(l), slot, h, kv == 0);
            // Each row decodes to what was written, within the format's error (exact for f32).
            const std::vector<float>& want = written[i + static_cast<size_t>(kv)];
            float absmax = 0.0f;
            for (int64_t e = 0; e < hd; ++e) absmax = std::max(absmax, std::fabs(want[static_cast<size_t>(h * hd + e)]));
            for (int64_t e = 0; e < hd; ++e) {
              const float w = want[static_cast<size_t>(h * hd + e)];
              const float tol = d == KvDtype::kF32    ? 0.0f
                                : d == KvDtype::kBf16 ? std::fabs(w) / 256.0f
                                : d == KvDtype::kInt8 ? absmax / 254.0f * 1.0001f
                                                      : std::max(std::fabs(w) / 16.0f, absmax / 448.0f / 1024.0f) * 1.0001f;
              ASSERT_LE(std::fabs(got[static_cast<size_t>(e)] - w), tol)
                  << kernels::kv_dtype_name(d) << " layer " << l << " slot " << slot << " head " << h;
            }
          }
  }
}

TEST(KvCache, CopyKvBlockCopiesElementsAndScales) {
  for (KvDtype d : kDtypes) {
    const int64_t layers = 2, bs = 4, heads = 2, hd = 8;
    KvCache device(layers, 3, bs, heads, hd, d), host(layers, 2, bs, heads, hd, d);
    uint32_t seed = 10;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t slot = 0; slot < 3 * bs; ++slot) {
        // Rows of very different magnitudes, so a missing scale copy shows.
        auto k = random_row(heads * hd, seed++), v = random_row(heads * hd, seed++);
        for (float& x : k) x *= static_cast<float>(slot + 1);
        write_kv_slot(device.layer(l), slot, k.data(), v.data());
      }
    copy_kv_block(device, 2, host, 1);     // swap out
    copy_kv_block(host, 1, device, 0);     // swap in over block 0
    copy_kv_block(device, 1, device, 1);   // no-op
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t t = 0; t < bs; ++t)
        for (int64_t h = 0; h < heads; ++h)
          for (bool keys : {true, false}) {
            const auto original = read_row(device.layer(l), 2 * bs + t, h, keys);
            EXPECT_EQ(read_row(host.layer(l), bs + t, h, keys), original) << kernels::kv_dtype_name(d);
            EXPECT_EQ(read_row(device.layer(l), t, h, keys), original) << kernels::kv_dtype_name(d);
          }
  }
}

TEST(KvCache, CopyKvBlockRejectsMismatchedCaches) {
  KvCache f32(1, 2, 4, 1, 8), int8(1, 2, 4, 1, 8, KvDtype::kInt8), other_heads(1, 2, 4, 2, 8);
  EXPECT_THROW(copy_kv_block(f32, 0, int8, 0), InvalidArgument);
  EXPECT_THROW(copy_kv_block(f32, 0, other_heads, 0), InvalidArgument);
  EXPECT_THROW(copy_kv_block(int8, 2, int8, 0), InvalidArgument);
  EXPECT_THROW(KvCache(1, 0, 4, 1, 8, KvDtype::kFp8), InvalidArgument);
}

// A latent cache (MLA, G28): one row per token and layer, half the bytes of K + V of that width; the
// view's values alias its keys; rows written by write_latent_slot stay in their layer and slot, and
// block copies (swap) and slot moves (tree speculation) carry rows and scales in every dtype.
TEST(KvCache, LatentCacheHoldsOneRowPerTokenAndCopies) {
  for (KvDtype d : kDtypes) {
    const int64_t layers = 3, bs = 4, width = 10;
    KvCache device(layers, 3, bs, 1, width, d, true), host(layers, 2, bs, 1, width, d, true);
    EXPECT_EQ(device.bytes_per_token(), KvCache::kv_cache_bytes_per_token(layers, 1, width, d) / 2);
    EXPECT_TRUE(device.latent());
    uint32_t seed = 50;
    std::vector<std::vector<float>> written;
    for (int64_t l = 0; l < layers; ++l) {
      const KvLayerView v = device.layer(l);
      EXPECT_TRUE(v.latent);
      EXPECT_EQ(v.values, v.keys);
      EXPECT_EQ(v.value_scales, v.key_scales);
      for (int64_t slot = 0; slot < 3 * bs; ++slot) {
        auto row = random_row(width, seed++);
        for (float& x : row) x *= static_cast<float>(slot + 1);  // scales differ per row
        write_latent_slot(v, slot, row.data());
        written.push_back(row);
      }
    }
    // Each row reads back (exactly in f32) in its own layer and slot: no layer overwrote another.
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t slot = 0; slot < 3 * bs; ++slot) {
        const auto got = read_row(device.layer(l), slot, 0, true);
        const auto& want = written[static_cast<size_t>(l * 3 * bs + slot)];
        for (int64_t i = 0; i < width; ++i)
          EXPECT_NEAR(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)], d == KvDtype::kF32 ? 0.0 : 0.1 * (slot + 1))
              << kernels::kv_dtype_name(d);
      }
    std::vector<std::vector<float>> before;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t t = 0; t < bs; ++t) before.push_back(read_row(device.layer(l), 2 * bs + t, 0, true));
    copy_kv_block(device, 2, host, 1);  // swap out
    copy_kv_block(host, 1, device, 0);  // swap in over block 0
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t t = 0; t < bs; ++t) {
        EXPECT_EQ(read_row(host.layer(l), bs + t, 0, true), before[static_cast<size_t>(l * bs + t)]);
        EXPECT_EQ(read_row(device.layer(l), t, 0, true), before[static_cast<size_t>(l * bs + t)]);
      }
    // A slot move within a sequence (table 1, 2): position 5 -> position 1.
    const std::vector<int32_t> table = {1, 2};
    const auto moved = read_row(device.layer(1), 2 * bs + 1, 0, true);
    copy_kv_slots(device, table, std::vector<int64_t>{5}, std::vector<int64_t>{1});
    EXPECT_EQ(read_row(device.layer(1), bs + 1, 0, true), moved) << kernels::kv_dtype_name(d);
    // Latent and per-head caches of the same shape do not mix.
    KvCache plain(layers, 2, bs, 1, width, d);
    EXPECT_THROW(copy_kv_block(device, 0, plain, 0), InvalidArgument);
  }
}

}  // namespace
}  // namespace lemma
