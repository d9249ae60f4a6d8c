// paged_attention (block tables) against the dense reference_sdpa oracle; the oracle's masks.
#include <gtest/gtest.h>

#include <random>

#include "lemma/model/layers/paged_attention.h"
#include "lemma/model/layers/reference_sdpa.h"

namespace lemma::layers {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

struct Case {
  int64_t num_heads, num_kv_heads, head_dim, num_cached, num_new, block_size, window;
};

void check_paged_matches_reference(const Case& c, uint32_t seed) {
  const int64_t ctx = c.num_cached + c.num_new;
  const int64_t kv_stride = c.num_kv_heads * c.head_dim;
  const auto keys = random_values(static_cast<size_t>(ctx * kv_stride), seed);
  const auto values = random_values(static_cast<size_t>(ctx * kv_stride), seed + 1);
  const auto q = random_values(static_cast<size_t>(c.num_new * c.num_heads * c.head_dim), seed + 2);

  // Scatter the keys/values over blocks in reverse order, with unused blocks in between.
  const int64_t needed = (ctx + c.block_size - 1) / c.block_size;
  KvCache cache(1, 2 * needed + 1, c.block_size, c.num_kv_heads, c.head_dim);
  KvLayerView view = cache.layer(0);
  std::vector<int32_t> table;
  for (int64_t b = 0; b < needed; ++b) table.push_back(static_cast<int32_t>(2 * (needed - b)));
  for (int64_t p = 0; p < ctx; ++p) {
    std::copy_n(keys.data() + p * kv_stride, kv_stride, view.keys + view.slot_offset(table, p));
    std::copy_n(values.data() + p * kv_stride, kv_stride, view.values + view.slot_offset(table, p));
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> got(q.size()), want(q.size()), scratch(static_cast<size_t>(ctx));
  const AttentionSequence seq{0, c.num_new, ctx, table};
  paged_attention(q, view, std::span(&seq, 1), {c.num_heads, scale, c.window}, scratch, got);
  const SdpaShape shape{c.num_new, ctx, c.num_heads, c.num_kv_heads, c.head_dim};
  reference_sdpa(q, keys, values, shape, {true, c.num_cached, c.window, {}}, scale, want);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

TEST(PagedAttention, MatchesReferenceSdpa) {
  uint32_t seed = 1;
  for (const Case& c : {Case{4, 2, 8, 0, 9, 4, 0}, Case{4, 4, 16, 5, 1, 4, 0}, Case{8, 1, 8, 7, 6, 3, 0},
                        Case{4, 2, 8, 0, 11, 2, 3}, Case{4, 2, 8, 9, 3, 5, 1}, Case{2, 2, 4, 3, 4, 16, 4}})
    check_paged_matches_reference(c, seed += 10);
}

TEST(PagedAttention, SequencesInABatchDoNotMix) {
  // Two sequences sharing one cache: each must see only its own blocks.
  const int64_t hd = 4, bs = 2;
  KvCache cache(1, 4, bs, 1, hd);
  KvLayerView view = cache.layer(0);
  const auto kv = random_values(static_cast<size_t>(4 * bs * hd), 3);
  std::copy(kv.begin(), kv.end(), view.keys);
  std::copy(kv.begin(), kv.end(), view.values);
  const auto q = random_values(static_cast<size_t>(2 * hd), 4);
  const std::vector<int32_t> t0 = {0, 1}, t1 = {2, 3};
  const AttentionSequence seqs[2] = {{0, 1, 4, t0}, {1, 1, 4, t1}};
  std::vector<float> out(q.size()), scratch(4), single(hd);
  paged_attention(q, view, seqs, {1, 0.5f, 0}, scratch, out);
  const AttentionSequence second{0, 1, 4, t1};
  paged_attention(std::span(q).subspan(hd), view, std::span(&second, 1), {1, 0.5f, 0}, scratch, single);
  for (int64_t d = 0; d < hd; ++d) EXPECT_FLOAT_EQ(out[static_cast<size_t>(hd + d)], single[static_cast<size_t>(d)]);
}

TEST(ReferenceSdpa, PaddingMaskEqualsDroppingTheKeys) {
  const int64_t hd = 4, nk = 5;
  const auto q = random_values(static_cast<size_t>(2 * hd), 1);
  const auto k = random_values(static_cast<size_t>(nk * hd), 2);
  const auto v = random_values(static_cast<size_t>(nk * hd), 3);
  const std::vector<uint8_t> padding = {0, 1, 0, 0, 1};
  std::vector<float> masked(q.size()), dropped(q.size());
  reference_sdpa(q, k, v, {2, nk, 1, 1, hd}, {false, 0, 0, padding}, 0.5f, masked);
  std::vector<float> k2, v2;
  for (int64_t j = 0; j < nk; ++j)
    if (!padding[static_cast<size_t>(j)]) {
      k2.insert(k2.end(), k.begin() + j * hd, k.begin() + (j + 1) * hd);
      v2.insert(v2.end(), v.begin() + j * hd, v.begin() + (j + 1) * hd);
    }
  reference_sdpa(q, k2, v2, {2, 3, 1, 1, hd}, {false, 0, 0, {}}, 0.5f, dropped);
  for (size_t i = 0; i < masked.size(); ++i) EXPECT_NEAR(masked[i], dropped[i], 1e-6);
}

TEST(ReferenceSdpa, CausalAndWindowMasks) {
  // One key per position with value = position: with uniform scores the output is the mean of the
  // visible positions, which tells exactly which keys were seen.
  const int64_t nk = 6, hd = 1;
  std::vector<float> q(static_cast<size_t>(nk), 0.0f), k(static_cast<size_t>(nk), 0.0f), v(static_cast<size_t>(nk));
  for (int64_t j = 0; j < nk; ++j) v[static_cast<size_t>(j)] = static_cast<float>(j);
  std::vector<float> out(static_cast<size_t>(nk));
  reference_sdpa(q, k, v, {nk, nk, 1, 1, hd}, {true, 0, 0, {}}, 1.0f, out);
  for (int64_t i = 0; i < nk; ++i) EXPECT_FLOAT_EQ(out[static_cast<size_t>(i)], static_cast<float>(i) / 2.0f);
  reference_sdpa(q, k, v, {nk, nk, 1, 1, hd}, {true, 0, 2, {}}, 1.0f, out);  // sees i-1 and i
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  for (int64_t i = 1; i < nk; ++i) EXPECT_FLOAT_EQ(out[static_cast<size_t>(i)], static_cast<float>(i) - 0.5f);
  const std::vector<uint8_t> all_padding(static_cast<size_t>(nk), 1);
  out.assign(out.size(), 7.0f);
  reference_sdpa(q, k, v, {nk, nk, 1, 1, hd}, {true, 0, 0, all_padding}, 1.0f, out);
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace lemma::layers
