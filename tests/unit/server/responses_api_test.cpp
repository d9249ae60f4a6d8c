// OpenAI's Responses API (POST /v1/responses): request parsing and its 400s, the bounded store
// behind previous_response_id (LRU, store: false), the response object and the streaming events
// with their sequence numbers.
#include "lemma/server/api_error.h"
#include "lemma/server/response_store.h"
#include "lemma/server/responses_request.h"
#include "server_fixture.h"
#include "sse_events.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr const char* kTemplate =
    "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";

std::string param_of(const json& body) {
  ResponseStore store(4);
  try {
    parse_responses_request(body.dump(), ServerConfig{}, store);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param().value_or("");
  }
  return "(accepted)";
}

TEST(ResponsesParse, TextInputInstructionsAndSampling) {
  ResponseStore store(4);
  auto p = parse_responses_request(
      json{{"input", "Hi"}, {"instructions", "Be brief."}, {"max_output_tokens", 9}, {"temperature", 0.3}, {"top_p", 0.8}}.dump(),
      ServerConfig{}, store);
  ASSERT_EQ(p.completion.messages.size(), 2u);
  EXPECT_EQ(p.completion.messages[0], (ojson{{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(p.completion.messages[1], (ojson{{"role", "user"}, {"content", "Hi"}}));
  EXPECT_EQ(p.conversation.size(), 1u);  // instructions are not part of what is stored
  EXPECT_EQ(p.completion.max_tokens, 9);
  EXPECT_FLOAT_EQ(p.completion.sampling.temperature, 0.3f);
  EXPECT_FLOAT_EQ(p.completion.sampling.top_p, 0.8f);
  EXPECT_TRUE(p.store);
}

TEST(ResponsesParse, MessageItemsAndPreviousConversation) {
  ResponseStore store(4);
  store.put("resp_a", ojson::array({{{"role", "user"}, {"content", "One"}}, {{"role", "assistant"}, {"content", "Two"}}}));
  json input = json::array({{{"type", "message"}, {"role", "developer"}, {"content", "Dev"}},
                            {{"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "Th"}},
                                                                        {{"type", "input_text"}, {"text", "ree"}}})}}});
  auto p = parse_responses_request(json{{"input", input}, {"previous_response_id", "resp_a"}, {"store", false}}.dump(),
                                   ServerConfig{}, store);
  ASSERT_EQ(p.completion.messages.size(), 4u);
  EXPECT_EQ(p.completion.messages[1]["content"], "Two");
  EXPECT_EQ(p.completion.messages[2]["role"], "developer");
  EXPECT_EQ(p.completion.messages[3]["content"], "Three");
  EXPECT_FALSE(p.store);
  EXPECT_EQ(p.previous_response_id, "resp_a");
}

TEST(ResponsesParse, RefusalsNameTheField) {
  EXPECT_EQ(param_of({{"model", "m"}}), "input");
  EXPECT_EQ(param_of({{"input", 3}}), "input");
  EXPECT_EQ(param_of({{"input", "x"}, {"previous_response_id", "resp_missing"}}), "previous_response_id");
  EXPECT_EQ(param_of({{"input", "x"}, {"max_output_tokens", 0}}), "max_output_tokens");
  EXPECT_EQ(param_of({{"input", "x"}, {"temperature", 3}}), "temperature");
  EXPECT_EQ(param_of({{"input", "x"}, {"stream", "yes"}}), "stream");
  EXPECT_EQ(param_of({{"input", "x"}, {"store", 1}}), "store");
  EXPECT_EQ(param_of({{"input", "x"}, {"inputs", "y"}}), "inputs");
  EXPECT_EQ(param_of({{"input", "x"}, {"tools", json::array({{{"type", "web_search"}}})}}), "tools");
  EXPECT_EQ(param_of({{"input", "x"}, {"text", {{"format", {{"type", "json_object"}}}}}}), "text.format");
  EXPECT_EQ(param_of({{"input", "x"}, {"truncation", "auto"}}), "truncation");
  EXPECT_EQ(param_of({{"input", json::array({{{"type", "function_call_output"}, {"output", "1"}}})}}), "input[0].type");
  EXPECT_EQ(param_of({{"input", json::array({{{"role", "tool"}, {"content", "x"}}})}}), "input[0].role");
  EXPECT_EQ(param_of({{"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_image"}}})}}})}}),
            "input[0].content[0].type");
  EXPECT_EQ(param_of({{"input", "x"}, {"tools", json::array()}, {"text", {{"format", {{"type", "text"}}}}}, {"truncation", "disabled"}}),
            "(accepted)");
}

TEST(ResponseStoreTest, KeepsTheMostRecentlyUsed) {
  ResponseStore store(2);
  store.put("a", ojson::array({1}));
  store.put("b", ojson::array({2}));
  ASSERT_TRUE(store.get("a"));  // a is now the most recent
  store.put("c", ojson::array({3}));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.get("b"));
  EXPECT_EQ(store.get("a"), ojson::array({1}));
  EXPECT_EQ(store.get("c"), ojson::array({3}));
  ResponseStore none(0);
  none.put("a", ojson::array());
  EXPECT_FALSE(none.get("a"));
}

TEST_F(ServerTest, ResponsesBodyAndPreviousResponseId) {
  start(ChatTemplate(kTemplate, "test"));
  auto r = post_json(port_, "/v1/responses", {{"input", "Hi"}, {"instructions", "S"}, {"max_output_tokens", 3}, {"metadata", {{"k", "v"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json body = r.json();
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(body["status"], "incomplete");  // cut by max_output_tokens
  EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(body["instructions"], "S");
  EXPECT_EQ(body["metadata"]["k"], "v");
  ASSERT_EQ(body["output"].size(), 1u);
  EXPECT_EQ(body["output"][0]["type"], "message");
  EXPECT_EQ(body["output"][0]["role"], "assistant");
  EXPECT_EQ(body["output"][0]["content"][0]["type"], "output_text");
  const std::string first = decode_script(3);
  EXPECT_EQ(body["output"][0]["content"][0]["text"], first);
  EXPECT_EQ(body["usage"]["output_tokens"], 3);
  EXPECT_EQ(body["usage"]["total_tokens"], body["usage"]["input_tokens"].get<int>() + 3);
  EXPECT_EQ(engine_.requests().at(0).prompt_ids, tokenizer_->encode("[system]S\n[user]Hi\n[assistant]", false, false));

  // The next turn sees the first's input and output, not its instructions.
  auto next = post_json(port_, "/v1/responses", {{"input", "More"}, {"previous_response_id", body["id"]}, {"max_output_tokens", 2}});
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_EQ(next.json()["previous_response_id"], body["id"]);
  EXPECT_EQ(engine_.requests().at(1).prompt_ids,
            tokenizer_->encode("[user]Hi\n[assistant]" + first + "\n[user]More\n[assistant]", false, false));

  // store: false keeps nothing to continue from.
  auto unstored = post_json(port_, "/v1/responses", {{"input", "x"}, {"store", false}, {"max_output_tokens", 1}});
  ASSERT_EQ(unstored.status, 200) << unstored.body;
  EXPECT_EQ(unstored.json()["store"], false);
  auto missing = post_json(port_, "/v1/responses", {{"input", "y"}, {"previous_response_id", unstored.json()["id"]}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.json()["error"]["param"], "previous_response_id");
}

TEST_F(ServerTest, ResponsesStoreIsBounded) {
  config_.response_store_entries = 1;
  start();
  auto a = post_json(port_, "/v1/responses", {{"input", "a"}, {"max_output_tokens", 1}});
  auto b = post_json(port_, "/v1/responses", {{"input", "b"}, {"max_output_tokens", 1}});
  ASSERT_EQ(b.status, 200);
  EXPECT_EQ(post_json(port_, "/v1/responses", {{"input", "c"}, {"previous_response_id", a.json()["id"]}}).status, 400);
  EXPECT_EQ(post_json(port_, "/v1/responses", {{"input", "c"}, {"previous_response_id", b.json()["id"]}, {"max_output_tokens", 1}}).status,
            200);
}

TEST_F(ServerTest, ResponsesStreamEventsInOrderWithSequenceNumbers) {
  start();
  // The script ends before 40 tokens: a natural stop, status completed.
  auto r = post_json(port_, "/v1/responses", {{"input", "Hi"}, {"stream", true}, {"max_output_tokens", 40}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto events = named_events(r.body);
  std::vector<std::string> names;
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& [name, data] = events[i];
    EXPECT_EQ(data["type"], name);
    EXPECT_EQ(data["sequence_number"], i);
    if (names.empty() || names.back() != name) names.push_back(name);
    if (name == "response.output_text.delta") text += data["delta"].get<std::string>();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                             "response.content_part.added", "response.output_text.delta",
                                             "response.output_text.done", "response.content_part.done",
                                             "response.output_item.done", "response.completed"}));
  const std::string all = decode_script(engine_.script.size());
  EXPECT_EQ(text, all);
  const json& done = events.back().second["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], all);
  for (const auto& [name, data] : events)
    if (name == "response.output_text.done") EXPECT_EQ(data["text"], all);
  EXPECT_EQ(events[0].second["response"]["status"], "in_progress");
  // A streamed response is stored too.
  EXPECT_EQ(post_json(port_, "/v1/responses", {{"input", "c"}, {"previous_response_id", done["id"]}, {"max_output_tokens", 1}}).status, 200);
}

TEST_F(ServerTest, ResponsesStreamFailureEndsWithResponseFailed) {
  engine_.fail_after_first_token = true;
  start();
  auto r = post_json(port_, "/v1/responses", {{"input", "Hi"}, {"stream", true}, {"max_output_tokens", 10}});
  ASSERT_EQ(r.status, 200);
  auto events = named_events(r.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().first, "response.failed");
  EXPECT_EQ(events.back().second["response"]["status"], "failed");
  EXPECT_EQ(events.back().second["response"]["error"]["message"], "boom");
}

}  // namespace
}  // namespace lemma::server::testing
