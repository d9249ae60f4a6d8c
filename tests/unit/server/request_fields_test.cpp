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

}  // namespace
}  // namespace lemma::server
