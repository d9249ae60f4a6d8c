// Tree speculation (G12) through the whole forward: every node of a random token tree, verified in
// one forward batched with ordinary sequences, gets exactly the logits (bitwise) of its path run as a
// chain after the same cached prefix, and the ordinary sequences are unchanged; after the accepted
// path's K/V is moved to its chain slots (copy_kv_slots), plain decoding continues with the bits of
// plain decoding from scratch. On a random tiny model and on stories260K, for the native ISA and
// forced AVX2 / scalar, every KV dtype, and cached lengths around block and 256-key split edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "lemma/base/error.h"
#include "lemma/model/token_tree.h"
#include "random_model.h"
#include "random_tree.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

constexpr KvDtype kDtypes[] = {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8};

// Scalar, AVX2 and this machine's own ISA (as far as it has them), each once.
std::vector<kernels::Isa> forced_isas() {
  std::vector<kernels::Isa> isas;
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::detected_isa()})
    if (isa <= kernels::detected_isa() && std::find(isas.begin(), isas.end(), isa) == isas.end()) isas.push_back(isa);
  return isas;
}

std::vector<int32_t> random_tokens(int64_t n, std::mt19937& rng, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return t;
}

int64_t blocks_for(int64_t tokens, int64_t block_size) { return (tokens + block_size - 1) / block_size; }

struct Setup {
  const Model& model;
  int64_t block_size;
  KvDtype dtype;

  std::string describe() const {
    return std::string(kernels::isa_name(model.runtime().isa)) + " " + std::string(kernels::kv_dtype_name(dtype)) +
           " block " + std::to_string(block_size);
  }

  // [tokens, vocab] logits of `tokens` as a chain after `prefix` on a fresh cache: the prefix
  // prefilled in one forward, then the tokens in one forward (as chain speculation verifies).
  std::vector<float> chain_logits(std::span<const int32_t> prefix, std::span<const int32_t> tokens) const {
    return Chains(*this, prefix, static_cast<int64_t>(tokens.size())).after_prefix(tokens);
  }

  // Chains after one prefix prefilled once: each chain overwrites the last one's slots.
  class Chains {
   public:
    Chains(const Setup& s, std::span<const int32_t> prefix, int64_t max_chain)
        : s_(s), num_cached_(static_cast<int64_t>(prefix.size())),
          cache_(KvCache::for_model(s.model.config(), blocks_for(num_cached_ + max_chain, s.block_size), s.block_size,
                                    s.dtype)),
          table_(contiguous_block_table(num_cached_ + max_chain, s.block_size)) {
      if (prefix.empty()) return;
      ForwardBatch batch;
      batch.sequences.push_back({prefix, 0, table_, LogitsRequest::kNone});
      s_.model.forward(batch, cache_, ws_, {});
    }
    std::vector<float> after_prefix(std::span<const int32_t> tokens) {
      std::vector<float> logits(tokens.size() * static_cast<size_t>(s_.model.config().vocab_size));
      ForwardBatch batch;
      batch.sequences.push_back({tokens, num_cached_, table_, LogitsRequest::kAll});
      s_.model.forward(batch, cache_, ws_, logits);
      return logits;
    }

   private:
    const Setup& s_;
    int64_t num_cached_;
    KvCache cache_;
    ForwardWorkspace ws_;
    std::vector<int32_t> table_;
  };
};

// One random tree after `num_cached` tokens, in a batch between a decoding and a prefilling sequence.
void check_tree_forward(const Setup& s, int64_t num_cached, uint32_t seed) {
  const Model& model = s.model;
  const int64_t V = model.config().vocab_size, bs = s.block_size;
  const auto row_bytes = static_cast<size_t>(V) * sizeof(float);
  std::mt19937 rng(seed);
  const auto prefix = random_tokens(num_cached, rng, V);
  const auto parents = random_tree(rng, 1 + static_cast<int64_t>(rng() % 16), 5, 3);
  const auto n = static_cast<int64_t>(parents.size());
  const auto nodes = random_tokens(n, rng, V);
  const auto a = random_tokens(41, rng, V), b = random_tokens(9, rng, V);
  const auto continuation = random_tokens(3, rng, V);

  // One cache, shuffled blocks: the tree's table has room for the continuation after compaction.
  const int64_t tree_blocks = blocks_for(num_cached + std::max<int64_t>(n, 8), bs);
  const int64_t a_blocks = blocks_for(41, bs), b_blocks = blocks_for(9, bs);
  KvCache cache = KvCache::for_model(model.config(), tree_blocks + a_blocks + b_blocks, bs, s.dtype);
  std::vector<int32_t> ids(static_cast<size_t>(tree_blocks + a_blocks + b_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const auto tree_table = std::span<const int32_t>(ids).first(static_cast<size_t>(tree_blocks));
  const auto a_table = std::span<const int32_t>(ids).subspan(static_cast<size_t>(tree_blocks), static_cast<size_t>(a_blocks));
  const auto b_table = std::span<const int32_t>(ids).subspan(static_cast<size_t>(tree_blocks + a_blocks));
  ForwardWorkspace ws(2);

  ForwardBatch setup;
  if (num_cached > 0) setup.sequences.push_back({prefix, 0, tree_table, LogitsRequest::kNone});
  setup.sequences.push_back({std::span(a).first(40), 0, a_table, LogitsRequest::kNone});
  model.forward(setup, cache, ws, {});

  ForwardBatch step;
  step.sequences.push_back({std::span(a).subspan(40), 40, a_table, LogitsRequest::kLast});
  step.sequences.push_back({nodes, num_cached, tree_table, LogitsRequest::kAll, parents});
  step.sequences.push_back({b, 0, b_table, LogitsRequest::kLast});
  std::vector<float> logits(static_cast<size_t>((n + 2) * V));
  model.forward(step, cache, ws, logits);
  const float* tree_rows = logits.data() + V;

  const std::string where = s.describe() + " cached " + std::to_string(num_cached) + " seed " + std::to_string(seed);
  const auto a_alone = s.chain_logits(std::span(a).first(40), std::span(a).subspan(40));
  ASSERT_EQ(0, std::memcmp(logits.data(), a_alone.data(), row_bytes)) << where << ": the decoding sequence changed";
  const auto b_alone = s.chain_logits({}, b);
  ASSERT_EQ(0, std::memcmp(logits.data() + (n + 1) * V, b_alone.data() + 8 * V, row_bytes))
      << where << ": the prefilling sequence changed";

  Setup::Chains chains(s, prefix, std::max<int64_t>(n, 8));
  std::vector<int32_t> deepest;
  for (int32_t leaf : tree_leaves(parents)) {
    const auto path = token_tree_path(parents, leaf);
    std::vector<int32_t> path_tokens;
    for (int32_t node : path) path_tokens.push_back(nodes[static_cast<size_t>(node)]);
    const auto chain = chains.after_prefix(path_tokens);
    for (size_t k = 0; k < path.size(); ++k)
      ASSERT_EQ(0, std::memcmp(chain.data() + k * V, tree_rows + path[k] * V, row_bytes))
          << where << ": node " << path[k] << " at depth " << k << " of a " << n << "-node tree";
    if (path.size() > deepest.size()) deepest = path;
  }

  // Accept the deepest path: its nodes move to slots num_cached + depth; then decode plainly.
  std::vector<int64_t> from, to;
  std::vector<int32_t> accepted = prefix;
  for (size_t k = 0; k < deepest.size(); ++k) {
    from.push_back(num_cached + deepest[k]);
    to.push_back(num_cached + static_cast<int64_t>(k));
    accepted.push_back(nodes[static_cast<size_t>(deepest[k])]);
  }
  copy_kv_slots(cache, tree_table, from, to);
  const auto want = chains.after_prefix([&] {
    std::vector<int32_t> rest(accepted.begin() + num_cached, accepted.end());
    rest.insert(rest.end(), continuation.begin(), continuation.end());
    return rest;
  }());
  std::vector<float> row(static_cast<size_t>(V));
  for (size_t j = 0; j < continuation.size(); ++j) {
    ForwardBatch decode;
    const auto position = static_cast<int64_t>(accepted.size() + j);
    decode.sequences.push_back({std::span(continuation).subspan(j, 1), position, tree_table, LogitsRequest::kLast});
    model.forward(decode, cache, ws, row);
    ASSERT_EQ(0, std::memcmp(row.data(), want.data() + (deepest.size() + j) * V, row_bytes))
        << where << ": decode " << j << " after accepting " << deepest.size() << " nodes";
  }
}

TEST(TreeForward, NodesEqualTheirPathsAsChainsOnARandomModel) {
  const RandomModel rm = make_random_model(small_config(), 17);
  const int64_t cached[] = {0, 1, 7, 16, 250, 255, 256, 257, 300, 511};
  for (kernels::Isa isa : forced_isas()) {
    RuntimeOptions runtime;
    runtime.isa = isa;
    const Model model = rm.build(runtime);
    for (KvDtype dtype : kDtypes)
      for (int64_t block_size : {16, 5})
        for (int64_t num_cached : cached)
          for (uint32_t seed = 1; seed <= 2; ++seed) {
            check_tree_forward({model, block_size, dtype}, num_cached, seed * 7919 + static_cast<uint32_t>(num_cached));
            if (HasFatalFailure()) return;
          }
  }
}

TEST(TreeForward, NodesEqualTheirPathsAsChainsOnStories260K) {
  const auto path = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(path);
  const int64_t cached[] = {0, 3, 64, 255, 256, 260, 470};
  for (kernels::Isa isa : forced_isas()) {
    RuntimeOptions runtime;
    runtime.isa = isa;
    const Model model = Model::open(path, LoadMode::kCopy, runtime);
    for (KvDtype dtype : kDtypes)
      for (int64_t num_cached : cached) {
        check_tree_forward({model, 16, dtype}, num_cached, 100 + static_cast<uint32_t>(num_cached));
        if (HasFatalFailure()) return;
      }
  }
}

TEST(TreeForward, RejectsBadTrees) {
  ModelConfig c = small_config();
  const Model model = make_random_model(c, 1).build();
  KvCache cache = KvCache::for_model(c, 4, 4);
  ForwardWorkspace ws;
  std::vector<float> logits(static_cast<size_t>(3 * c.vocab_size));
  const std::vector<int32_t> tokens = {1, 2, 3}, table = {0, 1};
  const auto run = [&](const Model& m, std::vector<int32_t> parents) {
    ForwardBatch batch;
    batch.sequences.push_back({tokens, 2, table, LogitsRequest::kAll, parents});
    m.forward(batch, cache, ws, logits);
  };
  EXPECT_NO_THROW(run(model, {-1, 0, 0}));
  EXPECT_THROW(run(model, {-1, 0}), InvalidArgument);          // one parent short
  EXPECT_THROW(run(model, {-1, 2, 0}), InvalidArgument);       // a parent after its child
  EXPECT_THROW(run(model, {-1, 0, 3}), InvalidArgument);       // past the tree
  EXPECT_THROW(run(model, {-1, 1, 0}), InvalidArgument);       // its own parent
  c.sliding_window = std::vector<int64_t>(static_cast<size_t>(c.num_layers), 8);
  const Model windowed = make_random_model(c, 1).build();
  EXPECT_THROW(run(windowed, {-1, 0, 0}), InvalidArgument);
}

TEST(KvSlotCopy, MovesSlotsInOrderInEveryLayerAndChecksBounds) {
  for (KvDtype dtype : kDtypes) {
    KvCache cache(2, 3, 4, 2, 8, dtype);
    const std::vector<int32_t> table = {2, 0, 1};
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    std::vector<float> k(16), v(16);
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t p = 0; p < 12; ++p) {
        for (auto& x : k) x = normal(rng);
        for (auto& x : v) x = normal(rng);
        write_kv_slot(cache.layer(l), cache.layer(l).slot(table, p), k.data(), v.data());
      }
    // Bytes of a position's row (K, V and their scales) in a layer.
    const auto bytes_of = [&](int64_t l, int64_t p) {
      const KvLayerView view = cache.layer(l);
      const auto n = static_cast<size_t>(view.token_stride() * kernels::kv_element_bytes(dtype));
      const int64_t slot = view.slot(table, p);
      std::vector<char> out(static_cast<const char*>(view.keys) + slot * n, static_cast<const char*>(view.keys) + (slot + 1) * n);
      out.insert(out.end(), static_cast<const char*>(view.values) + slot * n, static_cast<const char*>(view.values) + (slot + 1) * n);
      if (view.key_scales != nullptr)
        for (int64_t h = 0; h < view.num_kv_heads; ++h) {
          const float scales[2] = {view.key_scales[slot * view.num_kv_heads + h], view.value_scales[slot * view.num_kv_heads + h]};
          out.insert(out.end(), reinterpret_cast<const char*>(scales), reinterpret_cast<const char*>(scales + 2));
        }
      return out;
    };
    // Accepted tree nodes 1, 3, 6 after 2 cached tokens move to positions 2, 3, 4 (crossing blocks).
    std::vector<std::vector<char>> before;
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t p : {3, 5, 8}) before.push_back(bytes_of(l, p));
    const std::vector<int64_t> from = {3, 5, 8}, to = {2, 3, 4};
    copy_kv_slots(cache, table, from, to);
    size_t i = 0;
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t p : {2, 3, 4}) EXPECT_EQ(bytes_of(l, p), before[i++]) << kernels::kv_dtype_name(dtype) << " layer " << l << " position " << p;
    EXPECT_THROW(copy_kv_slots(cache, table, std::vector<int64_t>{3}, std::vector<int64_t>{12}), InvalidArgument);
    EXPECT_THROW(copy_kv_slots(cache, table, std::vector<int64_t>{3, 4}, std::vector<int64_t>{1}), InvalidArgument);
    const std::vector<int32_t> bad_table = {2, 7};
    EXPECT_THROW(copy_kv_slots(cache, bad_table, std::vector<int64_t>{5}, std::vector<int64_t>{0}), InvalidArgument);
  }
}

}  // namespace
}  // namespace lemma::testing
