// CORS (--allowed-origins): off by default, preflight answers, headers on every response of an
// allowed origin (SSE streams included), nothing for other origins.
#include "lemma/server/cors.h"
#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

const std::map<std::string, std::string> kPreflight = {{"Origin", "http://app.example"},
                                                       {"Access-Control-Request-Method", "POST"},
                                                       {"Access-Control-Request-Headers", "content-type, x-api-key"}};

TEST_F(ServerTest, CorsIsOffByDefault) {
  start();
  auto pre = http_request(port_, "OPTIONS", "/v1/chat/completions", "", kPreflight);
  EXPECT_EQ(pre.status, 405);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "");
  auto r = http_request(port_, "GET", "/v1/models", "", {{"Origin", "http://app.example"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("access-control-allow-origin"), "");
}

TEST_F(ServerTest, CorsListedOriginsGetHeadersAndPreflights) {
  config_.allowed_origins = {"http://app.example"};
  config_.api_key = "k";  // a preflight carries no key and still gets its answer
  start();
  auto pre = http_request(port_, "OPTIONS", "/v1/chat/completions", "", kPreflight);
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "http://app.example");
  EXPECT_EQ(pre.header("vary"), "Origin");
  EXPECT_NE(pre.header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(pre.header("access-control-allow-headers"), "content-type, x-api-key");
  auto other = http_request(port_, "OPTIONS", "/v1/chat/completions", "",
                            {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(other.header("access-control-allow-origin"), "");

  const std::map<std::string, std::string> from_app = {{"Origin", "http://app.example"}, {"Authorization", "Bearer k"}};
  auto models = http_request(port_, "GET", "/v1/models", "", from_app);
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(models.header("access-control-allow-origin"), "http://app.example");
  EXPECT_NE(models.header("access-control-expose-headers").find("x-request-id"), std::string::npos);
  auto refused = http_request(port_, "GET", "/v1/models", "", {{"Origin", "http://app.example"}});
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.header("access-control-allow-origin"), "http://app.example");  // the page can read the error
  json chat = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 2}, {"stream", true}};
  auto stream = post_json(port_, "/v1/chat/completions", chat, from_app);
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(stream.header("content-type"), "text/event-stream");
  EXPECT_EQ(stream.header("access-control-allow-origin"), "http://app.example");
  auto messages = post_json(port_, "/v1/messages", {{"max_tokens", 2}, {"stream", true}, {"messages", chat["messages"]}}, from_app);
  EXPECT_EQ(messages.header("access-control-allow-origin"), "http://app.example");
  auto stranger = http_request(port_, "GET", "/v1/models", "", {{"Origin", "http://evil.example"}, {"Authorization", "Bearer k"}});
  EXPECT_EQ(stranger.status, 200);
  EXPECT_EQ(stranger.header("access-control-allow-origin"), "");
}

TEST(Cors, WildcardAllowsAnyOrigin) {
  HeaderList h = cors_headers({"*"}, "http://x.example");
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h.front(), (std::pair<std::string, std::string>{"Access-Control-Allow-Origin", "*"}));
  EXPECT_TRUE(cors_headers({"*"}, "").empty());
  EXPECT_TRUE(cors_headers({}, "http://x.example").empty());
  EXPECT_TRUE(cors_headers({"http://a.example"}, "http://b.example").empty());
}

}  // namespace
}  // namespace lemma::server::testing
