// Structured output through the real server and engine (stories260K, whose tokenizer is a 512-token
// SentencePiece vocabulary): guided_choice, guided_regex, GBNF and response_format json_schema outputs are
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

using Reply = JsonReply;

Reply post(uint16_t port, const std::string& path, const json& body) { return post_json(port, path, body); }

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

// llama-server's `grammar` (GBNF), and vLLM's guided_grammar: outputs are sentences of the grammar; a
// malformed grammar is a 400 naming the field and the place.
TEST(ServeStructuredOutput, GbnfGrammarsConstrainTheOutput) {
  LEMMA_REQUIRE_SHARED(stories());
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1");
  ASSERT_TRUE(server.started()) << server.log();
  const uint16_t port = server.port();

  const std::string gbnf = "root ::= answer \" \" [0-9]{2}  # yes or no, and a number\n"
                           "answer ::= (\"yes\" | \"no\")\n";
  auto r = post(port, "/v1/chat/completions", chat({{"grammar", gbnf}}));
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::string text = r.body["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_TRUE(std::regex_match(text, std::regex("(yes|no) [0-9]{2}"))) << text;
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");

  r = post(port, "/v1/completions",
           {{"prompt", "Tom had"}, {"max_tokens", 30}, {"guided_grammar", "root ::= [a-z]{3,5} (\",\" [a-z]{3,5}){2}"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::string list = r.body["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(std::regex_match(list, std::regex("[a-z]{3,5}(,[a-z]{3,5}){2}"))) << list;

  r = post(port, "/v1/chat/completions", chat({{"grammar", "root ::= (\"yes\" | \"no\"\n"}}));
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["param"], "grammar") << r.body.dump();
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("line 2, column 1"), std::string::npos) << r.body.dump();
  r = post(port, "/v1/chat/completions", chat({{"grammar", "start ::= \"a\""}}));
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("root"), std::string::npos) << r.body.dump();
  r = post(port, "/v1/chat/completions", chat({}));
  EXPECT_EQ(r.status, 200);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20000), 0) << server.log();
}

// tool_choice "required" or a named function: the grammar of one call in the template's format
// (Qwen2.5's Hermes `<tool_call>` here), so even stories260K calls a tool, with arguments of its schema.
TEST(ServeStructuredOutput, ForcedToolCallsFollowTheirParameterSchema) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto tpl = shared_data("chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  LEMMA_REQUIRE_SHARED(tpl);
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1 --chat-template " + shell_quote(tpl.string()));
  ASSERT_TRUE(server.started()) << server.log();
  const json weather = {{"type", "function"},
                        {"function", {{"name", "get_weather"},
                                      {"parameters", {{"type", "object"},
                                                      {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}}}},
                                                      {"required", {"city"}},
                                                      {"additionalProperties", false}}}}}};
  const json time = {{"type", "function"},
                     {"function", {{"name", "get_time"},
                                   {"parameters", {{"type", "object"},
                                                   {"properties", {{"zone", {{"enum", {"utc", "cet"}}}}}},
                                                   {"required", {"zone"}},
                                                   {"additionalProperties", false}}}}}};
  for (const json& choice : {json("required"), json({{"type", "function"}, {"function", {{"name", "get_time"}}}})}) {
    SCOPED_TRACE(choice.dump());
    auto r = post(server.port(), "/v1/chat/completions",
                  chat({{"tools", {weather, time}}, {"tool_choice", choice}, {"max_tokens", 200}}));
    ASSERT_EQ(r.status, 200) << r.body.dump();
    const json& c = r.body["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls") << r.body.dump();
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << r.body.dump();
    const json call = c["message"]["tool_calls"][0]["function"];
    const json args = json::parse(call["arguments"].get<std::string>());
    if (call["name"] == "get_weather") {
      EXPECT_TRUE(args["city"].is_string() && args.size() == 1) << args.dump();
    } else {
      EXPECT_EQ(call["name"], "get_time");
      EXPECT_TRUE((args["zone"] == "utc" || args["zone"] == "cet") && args.size() == 1) << args.dump();
    }
    if (choice.is_object()) EXPECT_EQ(call["name"], "get_time");
  }
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20000), 0) << server.log();
}

}  // namespace
}  // namespace lemma::testing
