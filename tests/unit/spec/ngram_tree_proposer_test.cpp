// The n-gram tree proposer (tree speculation, G12) and the draft-tree walk the runner and the
// scheduler share (sched/draft_tree.h).
#include "lemma/spec/ngram_tree_proposer.h"

#include <gtest/gtest.h>

#include "lemma/sched/draft_tree.h"

namespace lemma::spec {
namespace {

struct Tree {
  std::vector<int32_t> tokens, parents;
};

Tree propose(const std::vector<int32_t>& tokens, int k, NgramTreeConfig config = {}) {
  Tree t{{99}, {99}};  // cleared first
  propose_ngram_tree(tokens, config, k, t.tokens, t.parents);
  return t;
}

TEST(NgramTreeProposer, MergesContinuationsLevelByLevel) {
  //                           0  1  2  3  4  5  6  7  8  9 10 11 12 13
  const std::vector<int32_t> t{5, 6, 1, 2, 5, 6, 3, 4, 5, 6, 1, 9, 5, 6};
  // [5, 6] occurred at 8 (-> 1 9 5 6), 4 (-> 3 4 5 6 1 9) and 0 (-> 1 2 5 6 1 9): the first and last
  // share their first token. Six nodes: both roots, then the second level, then what is left.
  const Tree tree = propose(t, 6);
  EXPECT_EQ(tree.tokens, (std::vector<int32_t>{1, 3, 9, 4, 2, 5}));
  EXPECT_EQ(tree.parents, (std::vector<int32_t>{-1, -1, 0, 1, 0, 2}));
  EXPECT_TRUE(is_valid_draft_tree(tree.parents));
  EXPECT_TRUE(propose(t, 0).tokens.empty());
}

TEST(NgramTreeProposer, OneBranchIsTheChainProposal) {
  const std::vector<int32_t> t{5, 6, 7, 8, 9, 5, 6, 7, 1, 5, 6};
  std::vector<int32_t> chain;
  propose_ngram(t, {}, 3, chain);
  const Tree tree = propose(t, 3, {{}, 1});
  EXPECT_EQ(tree.tokens, chain);
  EXPECT_EQ(tree.parents, (std::vector<int32_t>{-1, 0, 1}));
}

TEST(NgramTreeProposer, SkipsContinuationsItAlreadyHasAndFindsNothingWithoutAMatch) {
  // Every match of [7, 8, 1, 2], [8, 1, 2] and [1, 2] continues with 7 8 1 2: one branch.
  const Tree tree = propose({1, 2, 7, 8, 1, 2, 7, 8, 1, 2}, 4);
  EXPECT_EQ(tree.tokens, (std::vector<int32_t>{7, 8, 1, 2}));
  EXPECT_EQ(tree.parents, (std::vector<int32_t>{-1, 0, 1, 2}));
  EXPECT_TRUE(propose({1, 2, 3, 4}, 4).tokens.empty());
}

TEST(DraftTree, WalksChainsAndTrees) {
  const std::vector<int32_t> drafts = {4, 5, 6, 5, 7};
  // Chain: draft i follows i - 1.
  EXPECT_EQ(find_draft_child({}, drafts, -1, 4), 0);
  EXPECT_EQ(find_draft_child({}, drafts, 0, 5), 1);
  EXPECT_EQ(find_draft_child({}, drafts, 0, 6), -1);
  EXPECT_EQ(find_draft_child({}, drafts, 4, 7), -1);  // past the last draft
  EXPECT_EQ(draft_tree_levels({}, 5), 5);
  // Tree: 4 and 5 (index 3) under the last token; 5 (1) and 6 (2) under 4; 7 under the second 5.
  const std::vector<int32_t> parents = {-1, 0, 0, -1, 3};
  EXPECT_EQ(find_draft_child(parents, drafts, -1, 5), 3);
  EXPECT_EQ(find_draft_child(parents, drafts, 0, 5), 1);
  EXPECT_EQ(find_draft_child(parents, drafts, 3, 7), 4);
  EXPECT_EQ(find_draft_child(parents, drafts, 1, 7), -1);
  EXPECT_EQ(draft_tree_levels(parents, 5), 2);
  EXPECT_TRUE(is_valid_draft_tree(parents));
  EXPECT_FALSE(is_valid_draft_tree(std::vector<int32_t>{-1, 1}));
  EXPECT_FALSE(is_valid_draft_tree(std::vector<int32_t>{0}));
  // Two children with the sampled token: the first one is followed.
  EXPECT_EQ(find_draft_child(std::vector<int32_t>{-1, -1}, std::vector<int32_t>{8, 8}, -1, 8), 0);
  // Children in index order (the order a stochastic tree drew them in).
  std::vector<int32_t> children;
  draft_children(parents, 5, -1, children);
  EXPECT_EQ(children, (std::vector<int32_t>{0, 3}));
  draft_children(parents, 5, 0, children);
  EXPECT_EQ(children, (std::vector<int32_t>{1, 2}));
  draft_children(parents, 5, 2, children);
  EXPECT_TRUE(children.empty());
  draft_children({}, 5, 1, children);
  EXPECT_EQ(children, (std::vector<int32_t>{2}));
  draft_children({}, 5, 4, children);
  EXPECT_TRUE(children.empty());
}

}  // namespace
}  // namespace lemma::spec
