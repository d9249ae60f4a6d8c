// The real stories260K model (llama.cpp GGUF, F32): greedy continuations of golden
// stories260K_greedy.json token for token, and llama-perplexity's number on ppl-input.txt at ctx 128
// (stories260K_perplexity.json, F32 K/V: 109.6400 within 0.01).
#include <gtest/gtest.h>

#include <cmath>

#include "golden_models.h"
#include "lemma/model/greedy_generate.h"
#include "lemma/model/perplexity.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

const std::string kModel = "models/stories260K/stories260K.gguf";

TEST(Stories260K, GreedyContinuations) {
  LEMMA_REQUIRE_SHARED(shared_data(kModel));
  LEMMA_REQUIRE_SHARED(shared_data("golden/stories260K_greedy.json"));
  const Model model = Model::open(shared_data(kModel));
  const auto& cases = golden_json("stories260K_greedy.json")["cases"];
  ASSERT_EQ(cases.size(), 6u);
  for (const auto& c : cases) {
    const auto prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    const auto want = c["continuation_tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(generate_greedy(model, prompt, static_cast<int64_t>(want.size())), want) << c["prompt"];
    EXPECT_EQ(generate_greedy(model, prompt, static_cast<int64_t>(want.size()), std::nullopt, 2), want)
        << c["prompt"] << " (2 threads)";
  }
}

TEST(Stories260K, PerplexityMatchesLlamaCpp) {
  LEMMA_REQUIRE_SHARED(shared_data(kModel));
  LEMMA_REQUIRE_SHARED(shared_data("golden/stories260K_perplexity.json"));
  const Model model = Model::open(shared_data(kModel));
  const auto& golden = golden_json("stories260K_perplexity.json");
  const auto tokens = golden["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 12631u);
  PerplexityOptions options;
  options.context = 128;
  options.num_threads = 2;
  options.bos_token_id = model.config().bos_token_id;
  ASSERT_EQ(options.bos_token_id, 1);
  const PerplexityResult r = compute_perplexity(model, tokens, options);
  EXPECT_EQ(r.num_chunks, 98);
  EXPECT_EQ(r.num_scored_tokens, 6174);
  const auto want_chunks = golden["per_chunk_mean_nll_f32kv"].get<std::vector<double>>();
  ASSERT_EQ(r.chunk_mean_nll.size(), want_chunks.size());
  for (size_t i = 0; i < want_chunks.size(); ++i) EXPECT_NEAR(r.chunk_mean_nll[i], want_chunks[i], 1e-4) << "chunk " << i;
  EXPECT_NEAR(r.perplexity, 109.6400, 0.01);
}

}  // namespace
}  // namespace lemma::testing
