// /v1/embeddings over FakeEngine: parsing and its 400s, one pooling engine request per input
// (max_tokens 1, the server's pooling), L2-normalised vectors in input order, float and base64
// encodings, usage, batches.
#include <cmath>

#include "lemma/server/api_error.h"
#include "lemma/server/embeddings_request.h"
#include "lemma/server/embeddings_response.h"
#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

std::string param_of(const json& body) {
  try {
    parse_embeddings_request(body.dump());
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param().value_or("");
  }
  return "(accepted)";
}

std::vector<float> normalized(std::vector<float> v) {
  normalize_l2(v);
  return v;
}

TEST(EmbeddingsParse, EveryInputShape) {
  EXPECT_EQ(parse_embeddings_request(R"({"input": "a"})").inputs.size(), 1u);
  auto ids = parse_embeddings_request(R"({"input": [1, 2, 3]})");
  ASSERT_EQ(ids.inputs.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(ids.inputs[0]), (std::vector<int32_t>{1, 2, 3}));
  auto mixed = parse_embeddings_request(R"({"input": ["a", [4, 5], "b"], "encoding_format": "base64"})");
  ASSERT_EQ(mixed.inputs.size(), 3u);
  EXPECT_EQ(std::get<std::string>(mixed.inputs[2]), "b");
  EXPECT_TRUE(mixed.base64);
  EXPECT_EQ(param_of({{"model", "m"}}), "input");
  EXPECT_EQ(param_of({{"input", ""}}), "input");
  EXPECT_EQ(param_of({{"input", json::array()}}), "input");
  EXPECT_EQ(param_of({{"input", {"a", ""}}}), "input[1]");
  EXPECT_EQ(param_of({{"input", json::array({json::array({1}), json::array()})}}), "input[1]");
  EXPECT_EQ(param_of({{"input", json::array({1, -2})}}), "input");
  EXPECT_EQ(param_of({{"input", json::array({"a", 3.5})}}), "input[1]");
  EXPECT_EQ(param_of({{"input", "a"}, {"encoding_format", "int8"}}), "encoding_format");
  EXPECT_EQ(param_of({{"input", "a"}, {"dimensions", 8}}), "dimensions");
  EXPECT_EQ(param_of({{"input", "a"}, {"pooling", "cls"}}), "pooling");
}

TEST(EmbeddingsEncode, NormalisedAndBase64) {
  EXPECT_EQ(normalized({3.0f, 4.0f}), (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ(normalized({0.0f, 0.0f}), (std::vector<float>{0.0f, 0.0f}));
  const std::vector<float> one = {1.0f};  // bytes 00 00 80 3f
  EXPECT_EQ(base64_floats(one), "AACAPw==");
  const std::vector<float> two = {1.0f, -2.0f};  // 00 00 80 3f 00 00 00 c0
  EXPECT_EQ(base64_floats(two), "AACAPwAAAMA=");
  const std::vector<float> three = {0.0f, 0.0f, 0.0f};
  EXPECT_EQ(base64_floats(three), "AAAAAAAAAAAAAAAA");
}

TEST_F(ServerTest, EmbeddingsOneEngineRequestPerInputInOrder) {
  start();
  auto r = post_json(port_, "/v1/embeddings", {{"input", {"Hello world", "Caf\xC3\xA9"}}, {"model", "test-model"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json body = r.json();
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "test-model");
  ASSERT_EQ(body["data"].size(), 2u);
  const auto requests = engine_.requests();
  ASSERT_EQ(requests.size(), 2u);
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < 2; ++i) {
    // Submission order is input order.
    const CompletionRequest& q = requests[i];
    EXPECT_EQ(q.pooling, Pooling::kLast);
    EXPECT_EQ(q.max_tokens, 1);
    EXPECT_EQ(q.n, 1);
    EXPECT_EQ(body["data"][i]["object"], "embedding");
    EXPECT_EQ(body["data"][i]["index"], i);
    const auto got = body["data"][i]["embedding"].get<std::vector<float>>();
    EXPECT_EQ(got, normalized(FakeEngine::fake_embedding(q.prompt_ids, Pooling::kLast)));
    prompt_tokens += int64_t(q.prompt_ids.size());
  }
  EXPECT_EQ(requests[0].prompt_ids, tokenizer_->encode("Hello world", true, false));
  EXPECT_EQ(body["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(body["usage"]["total_tokens"], prompt_tokens);
}

TEST_F(ServerTest, EmbeddingsTokenArraysMeanPoolingAndBase64) {
  config_.pooling = Pooling::kMean;
  start();
  auto r = post_json(port_, "/v1/embeddings",
                     {{"input", json::array({json::array({5, 6, 7}), json::array({9})})}, {"encoding_format", "base64"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto requests = engine_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].prompt_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(requests[0].pooling, Pooling::kMean);
  EXPECT_EQ(r.json()["data"][0]["embedding"], base64_floats(normalized(FakeEngine::fake_embedding({5, 6, 7}, Pooling::kMean))));
  EXPECT_EQ(r.json()["data"][1]["embedding"], base64_floats(normalized(FakeEngine::fake_embedding({9}, Pooling::kMean))));
  EXPECT_EQ(r.json()["usage"]["prompt_tokens"], 4);
}

TEST_F(ServerTest, EmbeddingsErrors) {
  config_.max_model_len = 8;
  start();
  auto too_long = post_json(port_, "/v1/embeddings", {{"input", {"a", json::array({1, 2, 3, 4, 5, 6, 7, 8})}}});
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(too_long.json()["error"]["param"], "input[1]");
  auto out_of_vocab = post_json(port_, "/v1/embeddings", {{"input", json::array({1, 99999999})}});
  EXPECT_EQ(out_of_vocab.status, 400);
  EXPECT_EQ(out_of_vocab.json()["error"]["param"], "input");
  EXPECT_EQ(post_json(port_, "/v1/embeddings", {{"input", "a"}, {"model", "other"}}).status, 404);
  EXPECT_TRUE(engine_.requests().empty());
  engine_.fail_after_first_token = false;
  engine_.capacity = 0;  // a full queue: 429 with Retry-After
  auto full = post_json(port_, "/v1/embeddings", {{"input", "a"}});
  EXPECT_EQ(full.status, 429);
  EXPECT_FALSE(full.header("retry-after").empty());
  engine_.capacity = 1000;
  auto ok = post_json(port_, "/v1/embeddings", {{"input", "a"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace lemma::server::testing
