// Fail closed on what the server does not honour: unknown fields, structured output, tool calls
// beyond none/auto, malformed tools and unknown roles are 400s naming the field.
#include <gtest/gtest.h>

#include "lemma/server/api_error.h"
#include "lemma/server/openai_request.h"

namespace lemma::server {
namespace {

constexpr const char* kUser = R"("messages":[{"role":"user","content":"x"}])";

void expect_400(const std::string& body, const std::string& field, ApiKind kind) {
  try {
    parse_completion_request(body, kind, ServerConfig{});
    ADD_FAILURE() << "accepted: " << body;
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.param().value_or(""), field) << body << " -> " << e.what();
  }
}
void expect_chat_400(const std::string& fields, const std::string& field) {
  expect_400(std::string("{") + kUser + "," + fields + "}", field, ApiKind::kChat);
}
void expect_chat_ok(const std::string& fields) {
  const std::string body = std::string("{") + kUser + (fields.empty() ? "" : "," + fields) + "}";
  EXPECT_NO_THROW(parse_completion_request(body, ApiKind::kChat, ServerConfig{})) << body;
}

TEST(RequestFields, UnknownFieldsAreRefusedByName) {
  expect_400(R"({"prompt":"x","temprature":0.5})", "temprature", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","suffix":"y"})", "suffix", ApiKind::kCompletions);
  expect_chat_400(R"("functions":[])", "functions");
  expect_chat_400(R"("echo":true)", "echo");                       // completions only
  expect_400(R"({"prompt":"x","tools":[]})", "tools", ApiKind::kCompletions);  // chat only
  expect_chat_400(R"("store":true)", "store");
}

TEST(RequestFields, DocumentedIgnoredFieldsAreAccepted) {
  expect_chat_ok(R"("user":"u","metadata":{"k":"v"},"store":false,"service_tier":"auto")");
  EXPECT_NO_THROW(parse_completion_request(R"({"prompt":"x","user":"u","echo":false})", ApiKind::kCompletions,
                                           ServerConfig{}));
}

TEST(RequestFields, StructuredOutputFieldsAreChecked) {
  expect_chat_ok(R"("response_format":{"type":"text"})");
  expect_chat_ok(R"("response_format":{"type":"json_object"})");
  expect_chat_ok(R"("response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}})");
  expect_chat_400(R"("response_format":{"type":"json_schema","json_schema":{"name":"a"}})",
                  "response_format.json_schema.schema");
  expect_chat_400(R"("response_format":{"type":"yaml"})", "response_format.type");
  expect_chat_ok(R"("guided_choice":["a","b"])");
  expect_chat_400(R"("guided_choice":[])", "guided_choice");
  expect_chat_400(R"("guided_choice":["a"],"guided_regex":"a")", "guided_choice");  // one format per request
  expect_chat_ok(R"("grammar":"root ::= \"yes\" | \"no\"")");  // llama-server's GBNF
  expect_chat_ok(R"("guided_grammar":"root ::= [a-z]+")");
  expect_chat_ok(R"("structured_outputs":{"grammar":"root ::= \"x\""})");
  expect_chat_400(R"("grammar":42)", "grammar");
  expect_chat_400(R"("grammar":"root ::= \"x\"","guided_regex":"x")", "grammar");  // one format per request
  expect_chat_400(R"("structured_outputs":{"xml":"x"})", "structured_outputs.xml");
  expect_chat_400(R"("response_format":"json")", "response_format");
}

TEST(RequestFields, ToolsAreValidatedAndOnlyNoneOrAutoIsHonoured) {
  const std::string tool = R"({"type":"function","function":{"name":"get_weather","description":"d",
                              "parameters":{"type":"object","properties":{}},"strict":false}})";
  expect_chat_ok(R"("tools":[)" + tool + "]");
  expect_chat_ok(R"("tools":[)" + tool + R"(],"tool_choice":"auto","parallel_tool_calls":true)");
  expect_chat_ok(R"("tools":[)" + tool + R"(],"tool_choice":"none")");
  expect_chat_400(R"("tools":"garbage")", "tools");
  expect_chat_400(R"("tools":[])", "tools");
  expect_chat_400(R"("tools":[42])", "tools[0]");
  expect_chat_400(R"("tools":[{"type":"retrieval"}])", "tools[0].type");
  expect_chat_400(R"("tools":[{"type":"function"}])", "tools[0].function");
  expect_chat_400(R"("tools":[{"type":"function","function":{}}])", "tools[0].function.name");
  expect_chat_400(R"("tools":[{"type":"function","function":{"name":"a b"}}])", "tools[0].function.name");
  expect_chat_400(R"("tools":[{"type":"function","function":{"name":"a","parameters":"{}"}}])",
                  "tools[0].function.parameters");
  expect_chat_400(R"("tools":[{"type":"function","function":{"name":"a","extra":1}}])", "tools[0].function.extra");
  expect_chat_ok(R"("tools":[)" + tool + R"(],"tool_choice":"required")");
  expect_chat_ok(R"("tools":[)" + tool + R"(],"tool_choice":{"type":"function","function":{"name":"get_weather"}})");
  expect_chat_400(R"("tools":[)" + tool + R"(],"tool_choice":{"type":"function","function":{"name":"nope"}})",
                  "tool_choice.function.name");
  expect_chat_400(R"("tool_choice":"required")", "tool_choice");  // no tools
  expect_chat_400(R"("tool_choice":"sometimes")", "tool_choice");
  expect_chat_400(R"("parallel_tool_calls":"yes")", "parallel_tool_calls");
}

TEST(RequestFields, UnknownRolesAreRefused) {
  for (const char* role : {"system", "developer", "user", "assistant", "tool"}) {
    EXPECT_NO_THROW(parse_completion_request(std::string(R"({"messages":[{"role":")") + role + R"(","content":"x"}]})",
                                             ApiKind::kChat, ServerConfig{}))
        << role;
  }
  expect_400(R"({"messages":[{"role":"user","content":"x"},{"role":"root","content":"y"}]})", "messages[1].role",
             ApiKind::kChat);
  expect_400(R"({"messages":[{"role":"","content":"x"}]})", "messages[0].role", ApiKind::kChat);
}

// vLLM's beam search fields: parsed into SamplingParams::beam_search; impossible combinations are
// 400s naming the field.
TEST(RequestFields, BeamSearchFieldsAreParsedAndCheckedByName) {
  const auto parse = [](const std::string& fields, ServerConfig config = {}) {
    return parse_completion_request(std::string(R"({"prompt":"x",)") + fields + "}", ApiKind::kCompletions, config);
  };
  auto p = parse(R"("use_beam_search":true,"best_of":4,"n":2,"length_penalty":0.5,"early_stopping":true)");
  ASSERT_TRUE(p.sampling.beam_search.has_value());
  EXPECT_EQ(p.sampling.beam_search->width, 4);
  EXPECT_EQ(p.n, 2);
  EXPECT_FLOAT_EQ(p.sampling.beam_search->length_penalty, 0.5f);
  EXPECT_EQ(p.sampling.beam_search->early_stopping, EarlyStopping::kWhenFull);
  p = parse(R"("use_beam_search":true,"n":3,"early_stopping":"never")");  // width defaults to n
  EXPECT_EQ(p.sampling.beam_search->width, 3);
  EXPECT_EQ(p.sampling.beam_search->early_stopping, EarlyStopping::kNever);
  p = parse(R"("use_beam_search":true,"early_stopping":false)");
  EXPECT_EQ(p.sampling.beam_search->width, 1);
  EXPECT_EQ(p.sampling.beam_search->early_stopping, EarlyStopping::kHeuristic);
  EXPECT_FALSE(parse(R"("use_beam_search":false,"best_of":1)").sampling.beam_search.has_value());
  EXPECT_FALSE(parse(R"("n":2,"best_of":2)").sampling.beam_search.has_value());  // best_of == n: plain sampling
  expect_chat_ok(R"("use_beam_search":true,"best_of":2,"temperature":0.7)");  // temperature does not rank beams

  expect_400(R"({"prompt":"x","n":2,"best_of":3})", "best_of", ApiKind::kCompletions);  // best-of sampling
  expect_400(R"({"prompt":"x","length_penalty":2})", "length_penalty", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","early_stopping":true})", "early_stopping", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":1})", "use_beam_search", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":true,"best_of":2,"n":3})", "n", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":true,"best_of":17})", "best_of", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":true,"best_of":0})", "best_of", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":true,"early_stopping":"sometimes"})", "early_stopping",
             ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":true,"length_penalty":"long"})", "length_penalty", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":true,"stream":true})", "stream", ApiKind::kCompletions);
  expect_400(R"({"prompt":"x","use_beam_search":true,"logprobs":1})", "logprobs", ApiKind::kCompletions);
  expect_chat_400(R"("use_beam_search":true,"logprobs":true)", "logprobs");
  ServerConfig narrow;
  narrow.max_beam_width = 4;
  try {
    parse(R"("use_beam_search":true,"n":5)", narrow);
    ADD_FAILURE() << "a beam width of 5 above the server's 4 was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param().value_or(""), "n") << e.what();
  }
}

}  // namespace
}  // namespace lemma::server
