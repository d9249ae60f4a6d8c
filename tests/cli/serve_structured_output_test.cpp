// Structured output through the real server and engine (stories260K, whose tokenizer is a 512-token
// SentencePiece vocabulary): guided_choice, guided_regex and response_format json_schema outputs are
// texts of their grammar, whatever the tiny model would rather say; a schema that cannot be
// honoured is a 400 naming its keyword while other requests keep being served.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <regex>

#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using json = nlohmann::json;

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

struct Reply {
  int status = 0;
  json body;
};

Reply post(uint16_t port, const std::string& path, const json& body) {
  const std::string text = body.dump();
  const std::string raw = raw_http(port, "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                              "Connection: close\r\nContent-Length: " + std::to_string(text.size()) +
                                              "\r\n\r\n" + text, 30000);
  Reply r;
  if (raw.size() >= 12) r.status = std::stoi(raw.substr(9, 3));
  const size_t at = raw.find("\r\n\r\n");
  if (at != std::string::npos) r.body = json::parse(raw.substr(at + 4), nullptr, false);
  return r;
}

json chat(const json& extra) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Once upon a time"}}})}, {"max_tokens", 60},
               {"temperature", 0.7}, {"seed", 3}};
  if (extra.is_object()) body.update(extra);
  return body;
}

TEST(ServeStructuredOutput, OutputsAreTextsOfTheirGrammar) {
  LEMMA_REQUIRE_SHARED(stories());
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1");
  ASSERT_TRUE(server.started()) << server.log();
  const uint16_t port = server.port();

  auto r = post(port, "/v1/chat/completions", chat({{"guided_choice", {"happy", "sad", "sleepy"}}}));
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::string choice = r.body["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_TRUE(choice == "happy" || choice == "sad" || choice == "sleepy") << choice;
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");

  r = post(port, "/v1/completions", {{"prompt", "Tom had"}, {"max_tokens", 20}, {"guided_regex", "[0-9]{3}-[a-z]{2}"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::string code = r.body["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(std::regex_match(code, std::regex("[0-9]{3}-[a-z]{2}"))) << code;

  const json schema = {{"type", "object"},
                       {"properties", {{"mood", {{"enum", {"good", "bad"}}}}, {"count", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}}}},
                       {"required", {"mood", "count"}},
                       {"additionalProperties", false}};
  r = post(port, "/v1/chat/completions",
           chat({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "m"}, {"schema", schema}}}}},
                 {"max_tokens", 200}}));
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::string text = r.body["choices"][0]["message"]["content"].get<std::string>();
  const json obj = json::parse(text, nullptr, false);
  ASSERT_TRUE(obj.is_object()) << r.body.dump();
  EXPECT_TRUE(obj["mood"] == "good" || obj["mood"] == "bad") << text;
  EXPECT_TRUE(obj["count"].is_number_integer() && obj["count"] >= 1 && obj["count"] <= 9) << text;
  EXPECT_EQ(obj.size(), 2u) << text;

  // Cannot be honoured exactly: refused, naming the keyword; the server keeps serving.
  r = post(port, "/v1/chat/completions",
           chat({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {{"not", {{"type", "null"}}}}}}}}}}));
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["param"], "response_format.json_schema.schema") << r.body.dump();
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("not"), std::string::npos) << r.body.dump();
  r = post(port, "/v1/chat/completions", chat({}));
  EXPECT_EQ(r.status, 200);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20000), 0) << server.log();
}

}  // namespace
}  // namespace lemma::testing
