// Anthropic's Messages API (POST /v1/messages): request parsing and its 400s, stop_reason mapping,
// the message body, the streaming events, stop_sequences, x-api-key, errors in Anthropic's shape.
#include "lemma/server/anthropic_request.h"
#include "lemma/server/anthropic_response.h"
#include "lemma/server/api_error.h"
#include "server_fixture.h"
#include "sse_events.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

constexpr const char* kTemplate =
    "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";

json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }

std::string param_of(const std::string& body) {
  try {
    parse_messages_request(body, ServerConfig{});
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param().value_or("");
  }
  return "(accepted)";
}

TEST(MessagesParse, SystemBlocksMessagesAndSampling) {
  json body = {{"model", "m"},
               {"max_tokens", 7},
               {"system", json::array({{{"type", "text"}, {"text", "Be "}}, {{"type", "text"}, {"text", "brief."}}})},
               {"messages", json::array({user("Hi"), {{"role", "assistant"}, {"content", json::array({{{"type", "text"}, {"text", "Hello"}}})}},
                                         user("Again")})},
               {"stop_sequences", {"END", "STOP"}},
               {"temperature", 0.5},
               {"top_p", 0.9},
               {"top_k", 40},
               {"stream", true}};
  ParsedCompletion c = parse_messages_request(body.dump(), ServerConfig{});
  EXPECT_EQ(c.kind, ApiKind::kChat);
  ASSERT_EQ(c.messages.size(), 4u);
  EXPECT_EQ(c.messages[0]["role"], "system");
  EXPECT_EQ(c.messages[0]["content"], "Be brief.");
  EXPECT_EQ(c.messages[2]["content"], "Hello");
  EXPECT_EQ(c.max_tokens, 7);
  EXPECT_EQ(c.stop, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_FLOAT_EQ(c.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(c.sampling.top_p, 0.9f);
  EXPECT_EQ(c.sampling.top_k, 40);
  EXPECT_TRUE(c.stream);
  EXPECT_TRUE(c.assistant_prefill.empty());
}

TEST(MessagesParse, AFinalAssistantMessageIsAPrefill) {
  json body = {{"max_tokens", 5}, {"messages", json::array({user("Hi"), {{"role", "assistant"}, {"content", "The answer is"}}})}};
  ParsedCompletion c = parse_messages_request(body.dump(), ServerConfig{});
  ASSERT_EQ(c.messages.size(), 1u);
  EXPECT_EQ(c.assistant_prefill, "The answer is");
}

TEST(MessagesParse, RefusalsNameTheField) {
  const json ok = json::array({user("Hi")});
  EXPECT_EQ(param_of(json{{"messages", ok}}.dump()), "max_tokens");
  EXPECT_EQ(param_of(json{{"max_tokens", 0}, {"messages", ok}}.dump()), "max_tokens");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}}.dump()), "messages");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", ok}, {"temperature", 1.5}}.dump()), "temperature");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", ok}, {"top_k", 0}}.dump()), "top_k");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", ok}, {"stop_sequences", "x"}}.dump()), "stop_sequences");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", ok}, {"temprature", 1}}.dump()), "temprature");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", json::array({{{"role", "system"}, {"content", "x"}}})}}.dump()),
            "messages[0].role");
  json image = json::array({{{"role", "user"}, {"content", json::array({{{"type", "image"}, {"source", {}}}})}}});
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", image}}.dump()), "messages[0].content[0].type");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", ok}, {"tools", json::array({{{"name", "f"}}})}}.dump()), "tools");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", ok}, {"thinking", {{"type", "enabled"}}}}.dump()), "thinking");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", json::array({{{"role", "assistant"}, {"content", "x"}}})}}.dump()),
            "messages");
  EXPECT_EQ(param_of(json{{"max_tokens", 5}, {"messages", ok}, {"thinking", {{"type", "disabled"}}}, {"tools", json::array()}}.dump()),
            "(accepted)");
}

TEST(MessagesEncode, StopReasonsAndErrorShape) {
  EXPECT_EQ(anthropic_stop_reason(CallEnding{"length", std::nullopt, {}}), "max_tokens");
  EXPECT_EQ(anthropic_stop_reason(CallEnding{"stop", std::string("END"), {}}), "stop_sequence");
  EXPECT_EQ(anthropic_stop_reason(CallEnding{"stop", std::nullopt, {}}), "end_turn");
  HttpResponse r;
  r.status = 429;
  r.body = ApiError(429, "slow down").body();
  json e = json::parse(to_anthropic_error(r).body);
  EXPECT_EQ(e["type"], "error");
  EXPECT_EQ(e["error"]["type"], "rate_limit_error");
  EXPECT_EQ(e["error"]["message"], "slow down");
}

TEST_F(ServerTest, MessagesBodyHasAnthropicsShape) {
  start(ChatTemplate(kTemplate, "test"));
  auto r = post_json(port_, "/v1/messages",
                     {{"model", "test-model"}, {"max_tokens", 3}, {"system", "S"}, {"messages", json::array({user("Hi")})}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(engine_.requests().at(0).prompt_ids, tokenizer_->encode("[system]S\n[user]Hi\n[assistant]", false, false));
  json m = r.json();
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(m["model"], "test-model");
  EXPECT_EQ(m["content"][0]["type"], "text");
  EXPECT_EQ(m["content"][0]["text"], decode_script(3));
  EXPECT_EQ(m["stop_reason"], "max_tokens");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  EXPECT_EQ(m["usage"]["input_tokens"], engine_.requests().at(0).prompt_ids.size());
  EXPECT_EQ(m["usage"]["output_tokens"], 3);
}

TEST_F(ServerTest, MessagesPrefillIsContinued) {
  start(ChatTemplate(kTemplate, "test"));
  auto r = post_json(port_, "/v1/messages",
                     {{"max_tokens", 2}, {"messages", json::array({user("Hi"), {{"role", "assistant"}, {"content", "Sure:"}}})}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<int32_t> expected = tokenizer_->encode("[user]Hi\n[assistant]", false, false);
  for (int32_t id : tokenizer_->encode("Sure:", false, false)) expected.push_back(id);
  EXPECT_EQ(engine_.requests().at(0).prompt_ids, expected);
  EXPECT_EQ(r.json()["content"][0]["text"], decode_script(2));
}

TEST_F(ServerTest, MessagesStopSequenceEndsTheTurn) {
  start();
  // The script says " Hello world! The quick ..."; "world" stops it.
  auto r = post_json(port_, "/v1/messages",
                     {{"max_tokens", 30}, {"stop_sequences", {"zzz", "world"}}, {"messages", json::array({user("Hi")})}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["content"][0]["text"], " Hello ");
  EXPECT_EQ(r.json()["stop_reason"], "stop_sequence");
  EXPECT_EQ(r.json()["stop_sequence"], "world");
}

TEST_F(ServerTest, MessagesStreamEvents) {
  start();
  auto r = post_json(port_, "/v1/messages",
                     {{"max_tokens", 4}, {"stream", true}, {"messages", json::array({user("Hi")})}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "text/event-stream");
  auto events = named_events(r.body);
  ASSERT_GE(events.size(), 7u) << r.body;
  std::vector<std::string> names;
  std::string text;
  for (const auto& [name, data] : events) {
    EXPECT_EQ(data["type"], name);
    if (names.empty() || names.back() != name) names.push_back(name);
    if (name == "content_block_delta") {
      EXPECT_EQ(data["delta"]["type"], "text_delta");
      text += data["delta"]["text"].get<std::string>();
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "ping", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(text, decode_script(4));
  EXPECT_TRUE(events[0].second["message"]["content"].empty());
  EXPECT_TRUE(events[0].second["message"]["stop_reason"].is_null());
  const json& delta = events[events.size() - 2].second;
  EXPECT_EQ(delta["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(delta["usage"]["output_tokens"], 4);
}

TEST_F(ServerTest, MessagesErrorsHaveAnthropicsShape) {
  config_.api_key = "sekret";
  start();
  const json body = {{"max_tokens", 2}, {"messages", json::array({user("Hi")})}};
  auto unauthorized = post_json(port_, "/v1/messages", body);
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(unauthorized.json()["type"], "error");
  EXPECT_EQ(unauthorized.json()["error"]["type"], "authentication_error");
  auto wrong = post_json(port_, "/v1/messages", body, {{"x-api-key", "sekreT"}});
  EXPECT_EQ(wrong.status, 401);
  auto ok = post_json(port_, "/v1/messages", body, {{"x-api-key", "sekret"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  auto bearer = post_json(port_, "/v1/messages", body, {{"Authorization", "Bearer sekret"}});
  EXPECT_EQ(bearer.status, 200) << bearer.body;
  auto bad = post_json(port_, "/v1/messages", {{"messages", json::array({user("Hi")})}}, {{"x-api-key", "sekret"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"]["type"], "invalid_request_error");
  EXPECT_NE(bad.json()["error"]["message"].get<std::string>().find("max_tokens"), std::string::npos) << bad.body;
  auto unknown_model = post_json(port_, "/v1/messages", {{"model", "nope"}, {"max_tokens", 2}, {"messages", json::array({user("Hi")})}},
                                 {{"x-api-key", "sekret"}});
  EXPECT_EQ(unknown_model.status, 404);
  EXPECT_EQ(unknown_model.json()["error"]["type"], "not_found_error");
  // The OpenAI endpoints take x-api-key too, and keep OpenAI's error shape.
  auto chat = post_json(port_, "/v1/chat/completions", {{"messages", json::array({user("Hi")})}, {"max_tokens", 1}},
                        {{"x-api-key", "sekret"}});
  EXPECT_EQ(chat.status, 200) << chat.body;
  auto chat_bad = post_json(port_, "/v1/chat/completions", {{"messages", json::array({user("Hi")})}});
  EXPECT_EQ(chat_bad.json()["error"]["type"], "authentication_error");
  EXPECT_TRUE(chat_bad.json()["error"].contains("code"));
}

}  // namespace
}  // namespace lemma::server::testing
