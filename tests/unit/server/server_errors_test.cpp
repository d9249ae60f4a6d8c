// The server's error answers: status codes, the OpenAI error-object shape, API keys, body limits,
// a full engine queue; and that the server keeps serving after each.
#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

void expect_error(const HttpResult& r, int status, const std::string& param = "", const std::string& code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
  EXPECT_TRUE(e["type"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.body;
  }
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.body;
  }
}

TEST_F(ServerTest, BadRequestsGetOpenAiErrors) {
  config_.max_model_len = 64;
  start();
  expect_error(http_request(port_, "POST", "/v1/completions", "{not json"), 400, "", "invalid_json");
  expect_error(post_json(port_, "/v1/completions", {{"prompt", "x"}, {"temperature", -1}}), 400, "temperature");
  expect_error(post_json(port_, "/v1/completions", {{"prompt", 5}}), 400, "prompt");
  expect_error(post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 100}}), 400, "max_tokens");
  expect_error(post_json(port_, "/v1/completions", {{"prompt", {1, 2, 99999999}}}), 400, "prompt");
  expect_error(post_json(port_, "/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"60000", 1}}}}), 400, "logit_bias");
  std::string long_prompt(400, 'a');
  for (int i = 0; i < 40; ++i) long_prompt += " word";
  expect_error(post_json(port_, "/v1/completions", {{"prompt", long_prompt}}), 400, "prompt");
  expect_error(post_json(port_, "/v1/chat/completions", {{"messages", "hi"}}), 400, "messages");
  expect_error(http_request(port_, "POST", "/v1/completions", "{\"prompt\": \"\xC3\x28\"}"), 400);  // invalid UTF-8
  expect_error(post_json(port_, "/v1/completions", {{"model", "gpt-4"}, {"prompt", "x"}}), 404, "model", "model_not_found");
  expect_error(http_request(port_, "GET", "/v2/whatever"), 404, "", "not_found");
  auto wrong_method = http_request(port_, "GET", "/v1/chat/completions");
  expect_error(wrong_method, 405);
  EXPECT_EQ(wrong_method.header("allow"), "POST");
  EXPECT_TRUE(engine_.requests().empty());
  EXPECT_EQ(post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST_F(ServerTest, ApiKeyIsRequiredWhenConfigured) {
  config_.api_key = "sk-test";
  start();
  json body = {{"prompt", "x"}, {"max_tokens", 2}};
  expect_error(post_json(port_, "/v1/completions", body), 401, "", "invalid_api_key");
  expect_error(post_json(port_, "/v1/completions", body, {{"Authorization", "Bearer sk-wrong"}}), 401);
  expect_error(post_json(port_, "/v1/completions", body, {{"Authorization", "sk-test"}}), 401);
  expect_error(http_request(port_, "GET", "/v1/models"), 401);
  EXPECT_EQ(post_json(port_, "/v1/completions", body, {{"Authorization", "Bearer sk-test"}}).status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/health").status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/metrics").status, 200);
  EXPECT_EQ(engine_.requests().size(), 1u);
}

TEST_F(ServerTest, BodyOverTheLimitIs413) {
  config_.max_request_bytes = 2048;
  start();
  std::string big(4096, 'a');
  expect_error(post_json(port_, "/v1/completions", {{"prompt", big}}), 413, "", "request_too_large");
  EXPECT_TRUE(engine_.requests().empty());
  EXPECT_EQ(http_request(port_, "GET", "/health").status, 200);
}

TEST_F(ServerTest, FullQueueIs429WithRetryAfter) {
  engine_.capacity = 0;
  config_.retry_after_seconds = 2;
  start();
  auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});
  expect_error(r, 429, "", "queue_full");
  EXPECT_EQ(r.header("retry-after"), "2");
  auto s = post_json(port_, "/v1/chat/completions",
                     {{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"stream", true}});
  expect_error(s, 429);
  engine_.capacity = 10;
  EXPECT_EQ(post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
  auto m = http_request(port_, "GET", "/metrics");
  EXPECT_NE(m.body.find("lemma_requests_rejected_total 2"), std::string::npos) << m.body;
}

TEST_F(ServerTest, KeepAliveConnectionServesSeveralRequests) {
  start();
  RawConnection conn(port_);
  std::string body = json{{"prompt", "x"}, {"max_tokens", 2}}.dump();
  conn.send(raw_post("/v1/completions", body));
  conn.read_until("\"total_tokens\"", 3000);
  conn.send(raw_post("/v1/completions", body));
  std::string got = conn.read_until("HTTP/1.1 200 OK", 10);
  got = conn.read_until("\"total_tokens\"}", 10);
  size_t first = got.find("HTTP/1.1 200");
  ASSERT_NE(first, std::string::npos);
  std::string all = conn.read_until("NEVER", 500);
  EXPECT_NE(all.find("HTTP/1.1 200", first + 1), std::string::npos) << all;
}

}  // namespace
}  // namespace lemma::server::testing
