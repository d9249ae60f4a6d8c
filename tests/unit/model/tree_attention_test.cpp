// Tree attention (tree speculation, G12) at the layer level: every node of a random token tree,
// run as one tree sequence over a paged cache, gets the bits its own path gets when the path runs
// as a chain after the same cached keys, for every split kernel ISA, KV dtype, block size and
// cached length around the 256-key split boundaries. Also the slot tables make_tree_keys builds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "lemma/base/error.h"
#include "lemma/kernels/attention/flash_attention.h"
#include "lemma/model/layers/paged_attention.h"
#include "lemma/model/token_tree.h"
#include "random_tree.h"

namespace lemma::layers {
namespace {

using testing::random_tree;
using testing::tree_leaves;

constexpr KvDtype kDtypes[] = {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8};

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<int64_t> tree_positions(const std::vector<int32_t>& parents, int64_t num_cached) {
  std::vector<int64_t> positions(parents.size());
  token_tree_depths(parents, positions);
  for (int64_t& p : positions) p += num_cached;
  return positions;
}

struct TreeCase {
  int64_t num_heads, num_kv_heads, head_dim, num_cached, block_size;
};

// One random tree after c.num_cached random keys: the tree's rows against each leaf's path as a chain.
void check_tree_rows_equal_chains(const TreeCase& c, KvDtype dtype, kernels::Isa isa, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto parents = random_tree(rng, 1 + static_cast<int64_t>(rng() % 16), 5, 3);
  const auto n = static_cast<int64_t>(parents.size());
  const int64_t stride = c.num_kv_heads * c.head_dim, q_stride = c.num_heads * c.head_dim;
  const auto prefix_k = random_values(static_cast<size_t>(c.num_cached * stride), rng);
  const auto prefix_v = random_values(prefix_k.size(), rng);
  const auto node_k = random_values(static_cast<size_t>(n * stride), rng);
  const auto node_v = random_values(node_k.size(), rng);
  const auto q = random_values(static_cast<size_t>(n * q_stride), rng);

  // Two block tables over shuffled blocks of one cache: the tree's and the chains'.
  const int64_t tree_blocks = (c.num_cached + n + c.block_size - 1) / c.block_size;
  const int64_t chain_blocks = (c.num_cached + 6 + c.block_size - 1) / c.block_size;
  KvCache cache(1, tree_blocks + chain_blocks, c.block_size, c.num_kv_heads, c.head_dim, dtype);
  std::vector<int32_t> ids(static_cast<size_t>(tree_blocks + chain_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const std::span<const int32_t> tree_table = std::span(ids).first(static_cast<size_t>(tree_blocks));
  const std::span<const int32_t> chain_table = std::span(ids).subspan(static_cast<size_t>(tree_blocks));
  const KvLayerView view = cache.layer(0);
  for (int64_t p = 0; p < c.num_cached; ++p) {
    write_kv_slot(view, view.slot(tree_table, p), prefix_k.data() + p * stride, prefix_v.data() + p * stride);
    write_kv_slot(view, view.slot(chain_table, p), prefix_k.data() + p * stride, prefix_v.data() + p * stride);
  }
  for (int64_t i = 0; i < n; ++i)
    write_kv_slot(view, view.slot(tree_table, c.num_cached + i), node_k.data() + i * stride,
                  node_v.data() + i * stride);

  const AttentionParams params{c.num_heads, 1.0f / std::sqrt(static_cast<float>(c.head_dim)), 0};
  const auto positions = tree_positions(parents, c.num_cached);
  const int64_t max_depth = *std::max_element(positions.begin(), positions.end()) - c.num_cached;
  std::vector<int32_t> slots(static_cast<size_t>(n * tree_key_span(c.num_cached, max_depth)));
  const TreeKeys tree = make_tree_keys(parents, c.num_cached, positions, tree_table, c.block_size, slots);
  const AttentionSequence tree_seq{0, n, c.num_cached + n, tree_table, &tree};
  std::vector<float> scratch(static_cast<size_t>(paged_attention_scratch_floats(std::span(&tree_seq, 1), params, c.head_dim)));
  std::vector<float> tree_out(q.size(), std::nanf(""));
  paged_attention(q, view, std::span(&tree_seq, 1), params, scratch, tree_out, nullptr, isa);

  for (int32_t leaf : tree_leaves(parents)) {
    const auto path = token_tree_path(parents, leaf);
    const auto len = static_cast<int64_t>(path.size());
    std::vector<float> chain_q;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t node = path[static_cast<size_t>(k)];
      write_kv_slot(view, view.slot(chain_table, c.num_cached + k), node_k.data() + node * stride,
                    node_v.data() + node * stride);
      chain_q.insert(chain_q.end(), q.begin() + node * q_stride, q.begin() + (node + 1) * q_stride);
    }
    const AttentionSequence chain{0, len, c.num_cached + len, chain_table};
    std::vector<float> chain_scratch(
        static_cast<size_t>(paged_attention_scratch_floats(std::span(&chain, 1), params, c.head_dim)));
    std::vector<float> chain_out(chain_q.size(), std::nanf(""));
    paged_attention(chain_q, view, std::span(&chain, 1), params, chain_scratch, chain_out, nullptr, isa);
    for (int64_t k = 0; k < len; ++k)
      ASSERT_EQ(0, std::memcmp(chain_out.data() + k * q_stride, tree_out.data() + path[static_cast<size_t>(k)] * q_stride,
                               static_cast<size_t>(q_stride) * sizeof(float)))
          << kernels::isa_name(isa) << " " << kernels::kv_dtype_name(dtype) << " cached " << c.num_cached << " block "
          << c.block_size << " seed " << seed << ": node " << path[static_cast<size_t>(k)] << " at depth " << k;
  }
}

TEST(TreeAttention, EveryNodeEqualsItsPathAsAChainBitwise) {
  const int64_t cached[] = {0, 1, 9, 200, 250, 252, 255, 256, 257, 300, 509, 511, 512, 700};
  for (kernels::Isa isa : kernels::available_isas())
    for (KvDtype dtype : kDtypes)
      for (int64_t num_cached : cached)
        for (uint32_t seed = 1; seed <= 3; ++seed) {
          const TreeCase c{8, 2, seed == 2 ? 40 : 64, num_cached, seed == 3 ? 7 : 16};
          check_tree_rows_equal_chains(c, dtype, isa, seed * 1000 + static_cast<uint32_t>(num_cached));
          if (HasFatalFailure()) return;
        }
}

TEST(TreeAttention, SlotTablesFollowAncestorsInDepthOrder) {
  // Cached 258 tokens (key_begin 256), block size 4 over the table 5, 2, 9, ...; tree: 0 <- 1, 0 <- 2 <- 3.
  const std::vector<int32_t> parents = {-1, 0, 0, 2};
  std::vector<int32_t> table(70);
  for (size_t b = 0; b < table.size(); ++b) table[b] = static_cast<int32_t>((b * 7 + 5) % 70);
  const auto positions = tree_positions(parents, 258);
  EXPECT_EQ(positions, (std::vector<int64_t>{258, 259, 259, 260}));
  std::vector<int32_t> slots(4 * tree_key_span(258, 2));
  const TreeKeys tree = make_tree_keys(parents, 258, positions, table, 4, slots);
  EXPECT_EQ(tree.key_begin, 256);
  EXPECT_EQ(tree.key_span, 5);
  const auto slot = [&](int64_t p) { return static_cast<int32_t>(table[static_cast<size_t>(p / 4)] * 4 + p % 4); };
  const std::vector<int32_t> want = {
      slot(256), slot(257), slot(258), 0,         0,           // node 0
      slot(256), slot(257), slot(258), slot(259), 0,           // node 1: 0, 1
      slot(256), slot(257), slot(258), slot(260), 0,           // node 2: 0, 2
      slot(256), slot(257), slot(258), slot(260), slot(261)};  // node 3: 0, 2, 3
  EXPECT_EQ(slots, want);
}

TEST(TokenTree, DepthsPathsAndValidation) {
  const std::vector<int32_t> parents = {-1, -1, 0, 2, 1, 2};
  std::vector<int64_t> depths(parents.size());
  token_tree_depths(parents, depths);
  EXPECT_EQ(depths, (std::vector<int64_t>{0, 0, 1, 2, 1, 2}));
  EXPECT_EQ(token_tree_path(parents, 3), (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(token_tree_path(parents, 1), (std::vector<int32_t>{1}));
  EXPECT_NO_THROW(validate_token_tree(parents, 0));
  EXPECT_THROW(validate_token_tree(std::vector<int32_t>{-1, 1}, 0), InvalidArgument);   // its own parent
  EXPECT_THROW(validate_token_tree(std::vector<int32_t>{-1, 2, 0}, 0), InvalidArgument);  // parent after child
  EXPECT_THROW(validate_token_tree(std::vector<int32_t>{-2}, 0), InvalidArgument);
}

}  // namespace
}  // namespace lemma::layers
