// The TP sharding plan: heads by KV head (whole GQA groups), KV heads replicated when there are more
// ranks than KV heads, the MLP and the vocabulary in equal shares, and clear refusals.
#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/dist/tensor_parallel_plan.h"

namespace lemma::dist {
namespace {

TEST(TensorParallelPlan, SplitsWholeGqaGroups) {
  // 8 query heads over 2 KV heads, TP 2: rank 1 holds KV head 1 and query heads 4..7.
  const auto s = plan_tensor_parallel({8, 2, 256, 512}, 1, 2);
  EXPECT_EQ(s.kv_heads.begin, 1);
  EXPECT_EQ(s.kv_heads.end, 2);
  EXPECT_EQ(s.q_heads.begin, 4);
  EXPECT_EQ(s.q_heads.end, 8);
  EXPECT_EQ(s.ffn.begin, 128);
  EXPECT_EQ(s.ffn.end, 256);
  EXPECT_EQ(s.vocab.begin, 256);
  EXPECT_EQ(s.vocab.end, 512);
}

TEST(TensorParallelPlan, ReplicatesKvHeadsWhenRanksOutnumberThem) {
  // MQA (1 KV head), 4 heads, TP 4: every rank the one KV head and one query head.
  for (int r = 0; r < 4; ++r) {
    const auto s = plan_tensor_parallel({4, 1, 128, 512}, r, 4);
    EXPECT_EQ(s.kv_heads.begin, 0);
    EXPECT_EQ(s.kv_heads.size(), 1);
    EXPECT_EQ(s.q_heads.begin, r);
    EXPECT_EQ(s.q_heads.size(), 1);
  }
  // 2 KV heads, 4 ranks: ranks 0-1 hold KV head 0, ranks 2-3 KV head 1, each its own query heads.
  const auto s = plan_tensor_parallel({4, 2, 128, 512}, 2, 4);
  EXPECT_EQ(s.kv_heads.begin, 1);
  EXPECT_EQ(s.q_heads.begin, 2);
  EXPECT_EQ(s.q_heads.size(), 1);
}

TEST(TensorParallelPlan, PadsAnUnevenVocabulary) {
  const auto last = plan_tensor_parallel({4, 2, 128, 10}, 3, 4);
  EXPECT_EQ(last.vocab_stride, 3);
  EXPECT_EQ(last.vocab.begin, 9);
  EXPECT_EQ(last.vocab.end, 10);
}

TEST(TensorParallelPlan, RefusesShapesThatDoNotDivide) {
  const auto message = [](TensorParallelDims d, int size) {
    try {
      plan_tensor_parallel(d, 0, size);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({6, 3, 128, 512}, 2).find("num_kv_heads 3 is not divisible"), std::string::npos);
  EXPECT_NE(message({6, 2, 128, 512}, 3).find("not a multiple of num_kv_heads 2"), std::string::npos);
  EXPECT_NE(message({4, 1, 128, 512}, 8).find("num_heads 4 is not divisible"), std::string::npos);
  EXPECT_NE(message({8, 2, 126, 512}, 4).find("intermediate_size 126"), std::string::npos);
  EXPECT_NE(message({4, 4, 128, 3}, 4).find("vocabulary of 3"), std::string::npos);
  EXPECT_THROW(plan_tensor_parallel({4, 2, 128, 512}, 2, 2), InvalidArgument);
}

}  // namespace
}  // namespace lemma::dist
