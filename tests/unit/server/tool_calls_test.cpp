// Tool-call parsing: each template family's own rendering of a tool call (the text its model is
// trained to emit, from ../shared/data/chat_templates/*.expected.json) parses back into the call,
// and hand-made outputs cover parallel calls, content before calls, malformed calls and streaming.
#include "lemma/server/tool_calls.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lemma/grammar/token_constraint.h"
#include "lemma/server/api_error.h"
#include "lemma/server/output_constraint.h"
#include "lemma/server/tool_call_grammar.h"
#include "support/shared_data.h"

namespace lemma::server {
namespace {

using json = nlohmann::ordered_json;
using testing::read_file;
using testing::shared_data;

struct Family {
  const char* file;           // chat_templates/<file>.jinja / .expected.json
  ToolCallFormat format;
  const char* turn_start;     // what opens the assistant's tool-call turn in the rendering
  const char* turn_end;       // what closes it
};

constexpr Family kFamilies[] = {
    {"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::kHermes, "<|im_start|>assistant\n", "<|im_end|>"},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallFormat::kHermes, "<|im_start|>assistant\n", "<|im_end|>"},
    {"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::kLlama3Json,
     "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>"},
    {"Mistral-Small-3.2-24B-Instruct-2506", ToolCallFormat::kMistral, "[/INST]", "</s>"},
};

TEST(ToolCalls, EachTemplateFamilysRenderedCallParsesBack) {
  for (const Family& f : kFamilies) {
    SCOPED_TRACE(f.file);
    const auto source = shared_data(std::string("chat_templates/") + f.file + ".jinja");
    const auto expected = shared_data(std::string("chat_templates/") + f.file + ".expected.json");
    LEMMA_REQUIRE_SHARED(source);
    LEMMA_REQUIRE_SHARED(expected);
    EXPECT_EQ(detect_tool_call_format(read_file(source)), f.format);
    const json cases = json::parse(read_file(expected));
    const json* roundtrip = nullptr;
    for (const json& c : cases)
      if (c["case"] == "tools_roundtrip_genprompt") roundtrip = &c;
    ASSERT_NE(roundtrip, nullptr);
    // The assistant turn that carries the call: the first one after the user's question.
    const std::string out = (*roundtrip)["output"].get<std::string>();
    const size_t question = out.find("What is the weather in Paris?");
    ASSERT_NE(question, std::string::npos);
    const size_t begin = out.find(f.turn_start, question);
    ASSERT_NE(begin, std::string::npos);
    const size_t from = begin + std::string(f.turn_start).size();
    const std::string turn = out.substr(from, out.find(f.turn_end, from) - from);
    // The conversation's call, as OpenAI reports it.
    json want;
    for (const json& m : (*roundtrip)["conversation"])
      if (m.contains("tool_calls")) want = m["tool_calls"][0]["function"];
    const AssistantOutput got = parse_tool_calls(f.format, turn);
    ASSERT_EQ(got.calls.size(), 1u) << turn;
    EXPECT_EQ(got.calls[0].name, want["name"].get<std::string>());
    EXPECT_EQ(json::parse(got.calls[0].arguments), want["arguments"]) << got.calls[0].arguments;
    EXPECT_EQ(got.content, "");
    EXPECT_LT(tool_call_start(f.format, turn), turn.size()) << "a stream holds the call back";
  }
}

TEST(ToolCalls, TemplatesWithoutCallMarkersHaveNoFormat) {
  EXPECT_EQ(detect_tool_call_format("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallFormat::kNone);
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kNone, "<tool_call>{\"name\": \"f\"}</tool_call>").calls.size(), 0u);
}

TEST(ToolCalls, HermesParallelCallsWithContentBefore) {
  const std::string text =
      "Let me check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"y\\\": [1, \\\"}\\\"]}\"}\n</tool_call>";
  const AssistantOutput got = parse_tool_calls(ToolCallFormat::kHermes, text);
  ASSERT_EQ(got.calls.size(), 2u);
  EXPECT_EQ(got.content, "Let me check both.");
  EXPECT_EQ(got.calls[0].name, "a");
  EXPECT_EQ(got.calls[0].arguments, "{\"x\": 1}");  // the model's text as written, not re-serialised
  EXPECT_EQ(got.calls[1].name, "b");
  EXPECT_EQ(got.calls[1].arguments, "{\"y\": [1, \"}\"]}");  // a string's contents; a brace in a string does not close it
  // The last closing tag may be cut by the end of generation.
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"a\", \"arguments\": {}}").calls.size(), 1u);
}

TEST(ToolCalls, MalformedCallsStayContent) {
  for (const std::string& text : {std::string("<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": }</tool_call>"),
                                 std::string("<tool_call>{\"arguments\": {}}</tool_call>"),   // no name
                                 std::string("<tool_call>{\"name\": \"a\"}</tool_call> and more text"),
                                 std::string("<tool_call>{\"name\": \"a\", \"arguments\": [1]}</tool_call>")}) {
    const AssistantOutput got = parse_tool_calls(ToolCallFormat::kHermes, text);
    EXPECT_TRUE(got.calls.empty()) << text;
    EXPECT_EQ(got.content, text);
  }
  const std::string prose = "{not json at all";
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kLlama3Json, prose).content, prose);
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kLlama3Json, "The answer is 4.").calls.empty());
}

TEST(ToolCalls, Llama3CallsAfterThePythonTagOrSeparated) {
  auto got = parse_tool_calls(ToolCallFormat::kLlama3Json,
                              "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"x\"}}; {\"name\": \"b\", \"parameters\": {}}");
  ASSERT_EQ(got.calls.size(), 2u);
  EXPECT_EQ(got.calls[0].arguments, "{\"q\": \"x\"}");
  EXPECT_EQ(got.calls[1].name, "b");
}

TEST(ToolCalls, MistralArrayAndArgsForms) {
  auto got = parse_tool_calls(ToolCallFormat::kMistral,
                              "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"k\": 2}}, {\"name\": \"b\", \"arguments\": {}}]");
  ASSERT_EQ(got.calls.size(), 2u);
  EXPECT_EQ(got.calls[0].arguments, "{\"k\": 2}");
  EXPECT_EQ(got.calls[1].name, "b");
  EXPECT_EQ(got.calls[1].arguments, "{}");
  got = parse_tool_calls(ToolCallFormat::kMistral, "ok[TOOL_CALLS]a[ARGS]{\"k\": 1}[TOOL_CALLS]b[CALL_ID]xyz[ARGS]{}");
  ASSERT_EQ(got.calls.size(), 2u);
  EXPECT_EQ(got.content, "ok");
  EXPECT_EQ(got.calls[0].arguments, "{\"k\": 1}");
  EXPECT_EQ(got.calls[1].name, "b");
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kMistral, "[TOOL_CALLS]a[ARGS]{\"k\": ").calls.empty());
}

// tool_choice "required" with Mistral's format: the marker is a special token, read through a token
// reference; the forced output parses back into the call.
TEST(ToolCalls, MistralForcedCallStartsWithTheMarkerToken) {
  grammar::TokenVocabulary v;
  v.bytes = {"", ""};  // 0 [TOOL_CALLS] (special), 1 </s> (special, end)
  v.special = {true, true};
  v.special_text = {"[TOOL_CALLS]", "</s>"};
  v.end_ids = {1};
  for (int c = 0x20; c < 0x7F; ++c) {  // then one token per printable ASCII byte
    v.bytes.emplace_back(1, static_cast<char>(c));
    v.special.push_back(false);
    v.special_text.emplace_back();
  }
  const auto vocab = std::make_shared<const grammar::VocabularyIndex>(v);
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  const auto constraint = compile_forced_tool_call(tools, "", ToolCallSyntax{ToolCallFormat::kMistral}, vocab);
  grammar::ConstraintState state(*constraint);
  for (int32_t id = 0; id < vocab->vocab.size(); ++id) EXPECT_EQ(grammar::mask_allows(state.allowed(), id), id == 0) << id;
  EXPECT_FALSE(state.accept(1));
  ASSERT_TRUE(state.accept(0));
  std::string text = "[TOOL_CALLS]";  // as the server decodes it (special tokens kept with a tool format)
  for (char c : std::string(R"([{"name":"get_weather","arguments":{"city":"Paris"}}])")) {
    ASSERT_TRUE(state.accept(2 + (c - 0x20))) << text << c;
    text += c;
  }
  EXPECT_TRUE(state.is_complete());
  const auto got = parse_tool_calls(ToolCallFormat::kMistral, text);
  ASSERT_EQ(got.calls.size(), 1u);
  EXPECT_EQ(got.calls[0].name, "get_weather");
  EXPECT_EQ(got.calls[0].arguments, R"({"city":"Paris"})");
  // A vocabulary without the marker cannot be forced: 400 on tool_choice, naming it.
  grammar::TokenVocabulary plain = v;
  plain.special_text[0] = "<unused>";
  try {
    compile_forced_tool_call(tools, "get_weather", ToolCallSyntax{ToolCallFormat::kMistral},
                             std::make_shared<const grammar::VocabularyIndex>(plain));
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("[TOOL_CALLS]"), std::string::npos) << e.what();
  }
}

// A GBNF `grammar` field's token references are bound to the model's vocabulary; an unknown one is
// a 400 naming the field and the token.
TEST(ToolCalls, GbnfTokenReferencesAreBoundToTheVocabulary) {
  grammar::TokenVocabulary v;
  v.bytes = {"", "a"};
  v.special = {true, false};
  v.special_text = {"<|tool|>", ""};
  const auto vocab = std::make_shared<const grammar::VocabularyIndex>(v);
  OutputConstraintSpec spec;
  spec.kind = OutputConstraintSpec::Kind::kGbnf;
  spec.field = "grammar";
  spec.gbnf = "root ::= <|tool|> \"a\"";
  const auto constraint = compile_output_constraint(spec, vocab);
  grammar::ConstraintState state(*constraint);
  EXPECT_TRUE(grammar::mask_allows(state.allowed(), 0));
  EXPECT_FALSE(grammar::mask_allows(state.allowed(), 1));
  spec.gbnf = "root ::= <|nope|>";
  try {
    compile_output_constraint(spec, vocab);
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "grammar");
    EXPECT_NE(std::string(e.what()).find("'<|nope|>'"), std::string::npos) << e.what();
  }
}

// A stream releases text up to where a call may begin, holding back a partial marker.
TEST(ToolCalls, StreamsHoldBackFromTheFirstPossibleMarker) {
  EXPECT_EQ(tool_call_start(ToolCallFormat::kHermes, "Hello"), 5u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kHermes, "Hello <tool"), 6u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kHermes, "Hello <tool_call>{"), 6u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kHermes, "a < b"), 5u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kMistral, "x[TOOL"), 1u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kLlama3Json, ""), 0u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kLlama3Json, "  {\"na"), 0u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kLlama3Json, "<|pyth"), 0u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kLlama3Json, "Sure"), 4u);
}

}  // namespace
}  // namespace lemma::server
