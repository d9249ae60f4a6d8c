// paged_attention (block tables, every KV cache dtype) against the dense reference_sdpa oracle over
// the values the cache holds; batch, thread and chunking invariance; the oracle's masks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lemma/model/layers/paged_attention.h"
#include "lemma/kernels/attention/kv_quant.h"
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

constexpr KvDtype kDtypes[] = {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8};

// Writes token rows (kv_stride floats each) at positions 0.. of a sequence through the model's path.
void write_tokens(const KvLayerView& view, std::span<const int32_t> table, const std::vector<float>& keys,
                  const std::vector<float>& values, int64_t num_tokens) {
  const int64_t stride = view.token_stride();
  for (int64_t p = 0; p < num_tokens; ++p)
    write_kv_slot(view, view.slot(table, p), keys.data() + p * stride, values.data() + p * stride);
}

// The f32 values the cache holds for positions 0..num_tokens-1 (K or V).
std::vector<float> held_values(const KvLayerView& view, std::span<const int32_t> table, int64_t num_tokens, bool keys) {
  const int64_t hd = view.head_dim, esize = kernels::kv_element_bytes(view.dtype);
  std::vector<float> out(static_cast<size_t>(num_tokens * view.token_stride()));
  for (int64_t p = 0; p < num_tokens; ++p)
    for (int64_t h = 0; h < view.num_kv_heads; ++h) {
      const int64_t row = view.slot(table, p) * view.num_kv_heads + h;
      const float* scales = keys ? view.key_scales : view.value_scales;
      const char* base = static_cast<const char*>(keys ? view.keys : view.values);
      kernels::kv_decode_row(view.dtype, base + row * hd * esize, scales != nullptr ? scales[row] : 1.0f, hd,
                             out.data() + (p * view.num_kv_heads + h) * hd);
    }
  return out;
}

std::vector<float> attention_scratch(std::span<const AttentionSequence> seqs, const AttentionParams& p, int64_t hd) {
  return std::vector<float>(static_cast<size_t>(paged_attention_scratch_floats(seqs, p, hd)), std::nanf(""));
}

void check_paged_matches_reference(const Case& c, uint32_t seed, bool contiguous = false,
                                   KvDtype dtype = KvDtype::kF32) {
  const int64_t ctx = c.num_cached + c.num_new;
  const int64_t kv_stride = c.num_kv_heads * c.head_dim;
  const auto keys = random_values(static_cast<size_t>(ctx * kv_stride), seed);
  const auto values = random_values(static_cast<size_t>(ctx * kv_stride), seed + 1);
  const auto q = random_values(static_cast<size_t>(c.num_new * c.num_heads * c.head_dim), seed + 2);

  // Scatter the keys/values over blocks in reverse order, with unused blocks in between (or, for a
  // contiguous cache, the table 0, 1, 2, ...).
  const int64_t needed = (ctx + c.block_size - 1) / c.block_size;
  KvCache cache(1, 2 * needed + 1, c.block_size, c.num_kv_heads, c.head_dim, dtype);
  KvLayerView view = cache.layer(0);
  std::vector<int32_t> table = contiguous_block_table(ctx, c.block_size);
  if (!contiguous)
    for (int64_t b = 0; b < needed; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(2 * (needed - b));
  write_tokens(view, table, keys, values, ctx);
  const auto held_keys = held_values(view, table, ctx, true), held_vals = held_values(view, table, ctx, false);
  if (dtype == KvDtype::kF32) {  // an f32 cache holds exactly what was written
    ASSERT_EQ(held_keys, keys);
    ASSERT_EQ(held_vals, values);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> want(q.size());
  const AttentionSequence seq{0, c.num_new, ctx, table};
  const AttentionParams params{c.num_heads, scale, c.window};
  const SdpaShape shape{c.num_new, ctx, c.num_heads, c.num_kv_heads, c.head_dim};
  reference_sdpa(q, held_keys, held_vals, shape, {true, c.num_cached, c.window, {}}, scale, want);
  for (kernels::Isa isa : kernels::available_isas()) {
    std::vector<float> got(q.size(), std::nanf(""));
    std::vector<float> scratch = attention_scratch(std::span(&seq, 1), params, c.head_dim);
    paged_attention(q, view, std::span(&seq, 1), params, scratch, got, nullptr, isa);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 2e-5) << kernels::isa_name(isa) << " " << kernels::kv_dtype_name(dtype) << " heads " << c.num_heads << "/"
                                          << c.num_kv_heads << " hd " << c.head_dim << " cached " << c.num_cached
                                          << " new " << c.num_new << " element " << i;
  }
}

TEST(PagedAttention, MatchesReferenceSdpa) {
  for (KvDtype dtype : kDtypes) {
    uint32_t seed = 1;
    for (const Case& c : {Case{4, 2, 8, 0, 9, 4, 0}, Case{4, 4, 16, 5, 1, 4, 0}, Case{8, 1, 8, 7, 6, 3, 0},
                          Case{4, 2, 8, 0, 11, 2, 3}, Case{4, 2, 8, 9, 3, 5, 1}, Case{2, 2, 4, 3, 4, 16, 4},
                          Case{4, 2, 20, 6, 3, 4, 0}})
      check_paged_matches_reference(c, seed += 10, false, dtype);
  }
}

TEST(PagedAttention, MatchesReferenceSdpaAcrossSplitsAndQueryBlocks) {
  // Contexts crossing the 256-key splits; prompts over 8 tokens take the query-block path, short
  // ones the split-per-item path; GQA groups 1, 2, 4, 7; block sizes 1, 16, 32; sliding windows.
  uint32_t seed = 1000;
  for (const Case& c : {Case{2, 2, 16, 255, 2, 16, 0}, Case{4, 2, 32, 300, 1, 32, 0}, Case{7, 1, 64, 0, 300, 16, 0},
                        Case{8, 2, 80, 500, 37, 1, 0}, Case{4, 1, 128, 511, 2, 32, 0}, Case{14, 2, 64, 200, 120, 16, 0},
                        Case{4, 2, 32, 600, 17, 16, 256}, Case{4, 4, 16, 700, 1, 16, 100},
                        Case{7, 7, 16, 0, 257, 1, 64}, Case{2, 1, 80, 1000, 8, 32, 300}})
    check_paged_matches_reference(c, seed += 10);
  for (KvDtype dtype : {KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8})
    for (const Case& c : {Case{4, 2, 32, 300, 1, 32, 0}, Case{7, 1, 64, 0, 300, 16, 0}, Case{2, 1, 80, 1000, 8, 32, 300}})
      check_paged_matches_reference(c, seed += 10, false, dtype);
}

TEST(PagedAttention, ContiguousCacheIsOneBlockTable) {
  uint32_t seed = 2000;
  for (const Case& c : {Case{4, 2, 64, 0, 300, 16, 0}, Case{4, 2, 64, 299, 1, 16, 0}, Case{8, 8, 32, 0, 40, 512, 0},
                        Case{6, 3, 16, 600, 3, 600, 50}})
    check_paged_matches_reference(c, seed += 10, /*contiguous=*/true);
}

// Several sequences of one batch in one cache, each with its own (interleaved) blocks.
struct Batch {
  int64_t num_heads = 4, num_kv_heads = 2, head_dim = 32, block_size = 16;
  std::vector<std::vector<int32_t>> tables;
  std::vector<AttentionSequence> seqs;
  KvCache cache;
  std::vector<float> q;

  // (num_cached, num_new) per sequence.
  explicit Batch(const std::vector<std::pair<int64_t, int64_t>>& shapes, uint32_t seed,
                 KvDtype dtype = KvDtype::kF32) {
    int64_t blocks = 0, tokens = 0;
    for (auto [cached, fresh] : shapes) blocks += (cached + fresh + block_size - 1) / block_size;
    cache = KvCache(1, blocks, block_size, num_kv_heads, head_dim, dtype);
    KvLayerView view = cache.layer(0);
    const auto kv = random_values(static_cast<size_t>(blocks * block_size * view.token_stride()), seed);
    const std::vector<float> reversed(kv.rbegin(), kv.rend());
    write_tokens(view, contiguous_block_table(blocks * block_size, block_size), kv, reversed, blocks * block_size);
    tables.resize(shapes.size());
    int32_t next = 0;
    for (bool assigned = true; assigned;) {  // round-robin block ids over the sequences
      assigned = false;
      for (size_t s = 0; s < shapes.size(); ++s) {
        const int64_t need = (shapes[s].first + shapes[s].second + block_size - 1) / block_size;
        if (static_cast<int64_t>(tables[s].size()) < need) {
          tables[s].push_back(next++);
          assigned = true;
        }
      }
    }
    for (size_t s = 0; s < shapes.size(); ++s) {
      seqs.push_back({tokens, shapes[s].second, shapes[s].first + shapes[s].second, tables[s]});
      tokens += shapes[s].second;
    }
    q = random_values(static_cast<size_t>(tokens * num_heads * head_dim), seed + 1);
  }

  std::vector<float> run(std::span<const AttentionSequence> which, std::span<const float> queries, ThreadTeam* team,
                         kernels::Isa isa) {
    const AttentionParams params{num_heads, 0.17f, 0};
    int64_t tokens = 0;
    for (const auto& s : which) tokens = std::max(tokens, s.token_offset + s.num_tokens);
    std::vector<float> out(static_cast<size_t>(tokens * num_heads * head_dim), std::nanf(""));
    auto scratch = attention_scratch(which, params, head_dim);
    paged_attention(queries, cache.layer(0), which, params, scratch, out, team, isa);
    return out;
  }
};

TEST(PagedAttention, SequencesInABatchDoNotMix) {
  // Two sequences sharing one cache: each must see only its own blocks.
  const int64_t hd = 4, bs = 2;
  KvCache cache(1, 4, bs, 1, hd);
  KvLayerView view = cache.layer(0);
  const auto kv = random_values(static_cast<size_t>(4 * bs * hd), 3);
  write_tokens(view, contiguous_block_table(4 * bs, bs), kv, kv, 4 * bs);
  const auto q = random_values(static_cast<size_t>(2 * hd), 4);
  const std::vector<int32_t> t0 = {0, 1}, t1 = {2, 3};
  const AttentionSequence seqs[2] = {{0, 1, 4, t0}, {1, 1, 4, t1}};
  std::vector<float> out(q.size()), scratch(1000), single(hd);
  paged_attention(q, view, seqs, {1, 0.5f, 0}, scratch, out);
  const AttentionSequence second{0, 1, 4, t1};
  paged_attention(std::span(q).subspan(hd), view, std::span(&second, 1), {1, 0.5f, 0}, scratch, single);
  for (int64_t d = 0; d < hd; ++d) EXPECT_FLOAT_EQ(out[static_cast<size_t>(hd + d)], single[static_cast<size_t>(d)]);
}

TEST(PagedAttention, OutputIsBitwiseIndependentOfTheBatch) {
  // Each sequence alone equals the same sequence inside a batch of decodes and prefills.
  for (KvDtype dtype : kDtypes) {
  Batch b({{700, 1}, {40, 30}, {300, 5}, {0, 9}, {513, 1}}, 7, dtype);
  for (kernels::Isa isa : kernels::available_isas()) {
    const auto batched = b.run(b.seqs, b.q, nullptr, isa);
    const int64_t row_floats = b.num_heads * b.head_dim;
    for (const AttentionSequence& s : b.seqs) {
      const AttentionSequence alone{0, s.num_tokens, s.context_length, s.block_table};
      const auto q = std::span(b.q).subspan(static_cast<size_t>(s.token_offset * row_floats));
      const auto out = b.run(std::span(&alone, 1), q, nullptr, isa);
      ASSERT_EQ(0, std::memcmp(out.data(), batched.data() + s.token_offset * row_floats, out.size() * sizeof(float)))
          << kernels::isa_name(isa) << " " << kernels::kv_dtype_name(dtype) << " sequence at row " << s.token_offset;
    }
  }
  }
}

TEST(PagedAttention, OutputIsBitwiseIndependentOfTheThreadCount) {
  Batch b({{700, 1}, {40, 30}, {300, 5}, {1000, 1}}, 8);
  for (kernels::Isa isa : kernels::available_isas()) {
    const auto inline_out = b.run(b.seqs, b.q, nullptr, isa);
    for (int threads : {1, 2, 3, 5}) {
      ThreadTeam team(threads);
      const auto out = b.run(b.seqs, b.q, &team, isa);
      ASSERT_EQ(0, std::memcmp(out.data(), inline_out.data(), out.size() * sizeof(float)))
          << kernels::isa_name(isa) << " threads " << threads;
    }
  }
}

TEST(PagedAttention, PrefillRowsEqualDecodeRowsBitwise) {
  // A 300-token prompt at once (query blocks), in chunks of 7 (split items), and token by token
  // (decode): every row must be the same bits, so chunked prefill cannot change a result.
  for (KvDtype dtype : kDtypes) {
  Batch b({{0, 300}}, 9, dtype);
  const int64_t row_floats = b.num_heads * b.head_dim;
  for (kernels::Isa isa : kernels::available_isas()) {
    const auto whole = b.run(b.seqs, b.q, nullptr, isa);
    for (int64_t chunk : {1, 7, 100}) {
      for (int64_t first = 0; first < 300; first += chunk) {
        const int64_t n = std::min<int64_t>(chunk, 300 - first);
        const AttentionSequence part{0, n, first + n, b.tables[0]};
        const auto out = b.run(std::span(&part, 1), std::span(b.q).subspan(static_cast<size_t>(first * row_floats)),
                               nullptr, isa);
        ASSERT_EQ(0, std::memcmp(out.data(), whole.data() + first * row_floats, out.size() * sizeof(float)))
            << kernels::isa_name(isa) << " " << kernels::kv_dtype_name(dtype) << " chunk " << chunk << " first row "
            << first;
      }
    }
  }
  }
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
