// Streamed tool calls: each template family's rendered call (../shared/data/chat_templates), fed
// to ToolCallStream in pieces of every size, streams a first delta with the name and then argument
// fragments that add up, byte for byte, to the arguments the whole message parses into; parallel
// calls get their own indexes; a cut call is reported as far as it got; unconstrained text streams
// no call before the message has ended.
#include "lemma/server/tool_call_stream.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "lemma/server/response_format.h"
#include "support/shared_data.h"

namespace lemma::server {
namespace {

using json = nlohmann::ordered_json;

struct Family {
  const char* file;
  ToolCallFormat format;
  const char* turn_start;
  const char* turn_end;
};

constexpr Family kFamilies[] = {
    {"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::kHermes, "<|im_start|>assistant\n", "<|im_end|>"},
    {"Qwen-QwQ-32B", ToolCallFormat::kHermes, "<|im_start|>assistant\n", "<|im_end|>"},
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", ToolCallFormat::kHermes, "<|im_start|>assistant\n", "<|im_end|>"},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallFormat::kHermes, "<|im_start|>assistant\n", "<|im_end|>"},
    {"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::kLlama3Json, "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>"},
    {"meta-llama-Llama-3.3-70B-Instruct", ToolCallFormat::kLlama3Json, "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>"},
    {"Mistral-Small-3.2-24B-Instruct-2506", ToolCallFormat::kMistral, "[/INST]", "</s>"},
    {"mistralai-Ministral-3-14B-Reasoning-2512", ToolCallFormat::kMistral, "[/INST]", "</s>"},
    {"unsloth-mistral-Devstral-Small-2507", ToolCallFormat::kMistral, "[/INST]", "</s>"},
};

// The assistant turn that carries the template's rendered call (tools_roundtrip_genprompt).
std::string rendered_call(const Family& f) {
  const auto path = testing::shared_data(std::string("chat_templates/") + f.file + ".expected.json");
  if (!std::filesystem::exists(path)) return {};
  for (const json& c : json::parse(testing::read_file(path))) {
    if (c["case"] != "tools_roundtrip_genprompt") continue;
    const std::string out = c["output"].get<std::string>();
    const size_t begin = out.find(f.turn_start, out.find("What is the weather in Paris?"));
    const size_t from = begin + std::string(f.turn_start).size();
    return out.substr(from, out.find(f.turn_end, from) - from);
  }
  return {};
}

struct Streamed {
  std::string content;
  std::map<size_t, std::string> names, arguments;  // by call index
  std::string args(size_t k) const { return arguments.count(k) ? arguments.at(k) : std::string(); }
  std::map<size_t, int> fragments;                 // argument deltas per index
  size_t fragments_before_end = 0;                 // argument bytes streamed before finish()
  std::vector<ToolCall> calls;
  bool complete = false;
};

void collect(const ToolCallStream::Update& u, Streamed& s) {
  s.content += u.content;
  for (const ToolCallDelta& d : u.calls) {
    if (d.opens) {
      EXPECT_FALSE(s.names.count(d.index)) << "call " << d.index << " opened twice";
      EXPECT_EQ(d.arguments, "");
      s.names[d.index] = d.name;
    } else {
      EXPECT_TRUE(s.names.count(d.index)) << "arguments before the call's first delta";
      s.arguments[d.index] += d.arguments;
      ++s.fragments[d.index];
    }
  }
}

Streamed stream(ToolCallFormat format, const std::string& text, size_t piece, bool incremental, bool parallel = true) {
  ToolCallStream tools(format, incremental, parallel);
  Streamed s;
  for (size_t at = 0; at < text.size(); at += piece) collect(tools.feed(std::string_view(text).substr(at, piece)), s);
  for (const auto& [index, args] : s.arguments) s.fragments_before_end += args.size();
  collect(tools.finish(), s);
  s.calls = tools.calls();
  s.complete = tools.calls_complete();
  return s;
}

// The final calls and the streamed ones agree, byte for byte, and with the one-shot parse.
void expect_stream_matches_whole(const Streamed& s, const AssistantOutput& whole) {
  EXPECT_EQ(s.content, whole.content);
  ASSERT_EQ(s.calls.size(), whole.calls.size());
  ASSERT_EQ(s.names.size(), whole.calls.size());
  for (size_t k = 0; k < whole.calls.size(); ++k) {
    EXPECT_EQ(s.calls[k].name, whole.calls[k].name);
    EXPECT_EQ(s.calls[k].arguments, whole.calls[k].arguments);
    EXPECT_EQ(s.names.at(k), whole.calls[k].name);
    EXPECT_EQ(s.args(k), whole.calls[k].arguments) << "fragments of call " << k;
  }
}

TEST(ToolCallStream, EachTemplateFamilysCallStreamsAsWrittenAndAddsUpToTheWholeArguments) {
  for (const Family& f : kFamilies) {
    SCOPED_TRACE(f.file);
    const std::string call = rendered_call(f);
    if (call.empty()) {
      LEMMA_REQUIRE_SHARED(testing::shared_data(std::string("chat_templates/") + f.file + ".expected.json"));
      ADD_FAILURE() << "no rendered call";
      continue;
    }
    // Content before the call where the format allows it (Llama 3's message is the call alone).
    const std::string text = f.format == ToolCallFormat::kLlama3Json ? call : "Let me check.\n" + call;
    const AssistantOutput whole = parse_tool_calls(f.format, text);
    ASSERT_EQ(whole.calls.size(), 1u) << text;
    EXPECT_EQ(whole.calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(whole.calls[0].arguments), json({{"city", "Paris"}}));
    for (size_t piece : {size_t(1), size_t(2), size_t(3), size_t(7), text.size()}) {
      SCOPED_TRACE("pieces of " + std::to_string(piece) + " bytes");
      const Streamed s = stream(f.format, text, piece, true);
      expect_stream_matches_whole(s, whole);
      EXPECT_TRUE(s.complete);
      if (piece == 1) {  // written byte by byte: the arguments went out as they came, not at the end
        EXPECT_EQ(s.fragments.at(0), int(whole.calls[0].arguments.size()));
        EXPECT_EQ(s.fragments_before_end, whole.calls[0].arguments.size());
      }
    }
  }
}

TEST(ToolCallStream, ParallelCallsGetTheirOwnIndexes) {
  const std::vector<std::pair<ToolCallFormat, std::string>> messages = {
      {ToolCallFormat::kHermes,
       "ok\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n"
       "{\"name\": \"b\", \"arguments\": {\"y\": \"}\"}}\n</tool_call>"},
      {ToolCallFormat::kLlama3Json, "{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {\"y\": \"}\"}}"},
      {ToolCallFormat::kMistral, "ok[TOOL_CALLS]a[ARGS]{\"x\": 1}[TOOL_CALLS]b[CALL_ID]abcdefghi[ARGS]{\"y\": \"}\"}"},
      {ToolCallFormat::kMistral, "ok[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {\"y\": \"}\"}}]"},
  };
  for (const auto& [format, text] : messages) {
    SCOPED_TRACE(text);
    const AssistantOutput whole = parse_tool_calls(format, text);
    ASSERT_EQ(whole.calls.size(), 2u);
    for (size_t piece : {size_t(1), size_t(5), text.size()}) {
      const Streamed s = stream(format, text, piece, true);
      expect_stream_matches_whole(s, whole);
      EXPECT_EQ(s.names.at(0), "a");
      EXPECT_EQ(s.names.at(1), "b");
      EXPECT_EQ(s.args(1), "{\"y\": \"}\"}");
    }
    // parallel_tool_calls false: the first call only, streamed and whole.
    const Streamed one = stream(format, text, 1, true, false);
    ASSERT_EQ(one.calls.size(), 1u);
    EXPECT_EQ(one.names.size(), 1u);
    EXPECT_EQ(one.args(0), "{\"x\": 1}");
  }
}

TEST(ToolCallStream, ACutCallIsReportedAsFarAsItGotStreamedOrNot) {
  const std::string text = "Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2";
  for (size_t piece : {size_t(1), text.size()}) {
    const Streamed s = stream(ToolCallFormat::kHermes, text, piece, true);
    EXPECT_FALSE(s.complete);
    EXPECT_EQ(s.content, "Checking.");
    ASSERT_EQ(s.calls.size(), 1u);
    EXPECT_EQ(s.calls[0].arguments, "{\"x\": [1, 2");
    EXPECT_EQ(s.args(0), s.calls[0].arguments);
  }
}

TEST(ToolCallStream, UnconstrainedTextStreamsNoCallBeforeTheEndAndKeepsMalformedCallsAsContent) {
  const std::string good = "ok\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>";
  const Streamed s = stream(ToolCallFormat::kHermes, good, 1, false);
  EXPECT_EQ(s.fragments_before_end, 0u);
  expect_stream_matches_whole(s, parse_tool_calls(ToolCallFormat::kHermes, good));
  const std::string bad = "ok\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": }\n</tool_call>";
  const Streamed b = stream(ToolCallFormat::kHermes, bad, 1, false);
  EXPECT_TRUE(b.names.empty());
  EXPECT_EQ(b.content, bad);
}

// Call ids: distinct per call; for Mistral's format 9 alphanumerics (Mistral Small 3.2's template
// raises on any other id when the call comes back in the conversation), the same in both shapes.
TEST(ToolCallIds, DistinctPerCallAndNineAlphanumericsForMistral) {
  const ResponseIds ids{"chatcmpl-abc", "m", 0};
  EXPECT_EQ(tool_call_id(ids, 0, ToolCallFormat::kHermes), "call_chatcmpl-abc_0");
  const std::string a = tool_call_id(ids, 0, ToolCallFormat::kMistral), b = tool_call_id(ids, 1, ToolCallFormat::kMistral);
  EXPECT_NE(a, b);
  for (const std::string& id : {a, b}) {
    EXPECT_EQ(id.size(), 9u);
    for (char c : id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << id;
  }
  ojson choice = choice_json(ApiKind::kChat, 0, "", nullptr, "tool_calls");
  add_tool_calls(choice, ids, {{"f", "{}"}, {"g", "{}"}}, ToolCallFormat::kMistral);
  EXPECT_EQ(choice["message"]["tool_calls"][1]["id"], b);
  const ojson chunk = tool_call_chunk_json(ids, 0, {1, true, "g", ""}, ToolCallFormat::kMistral);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][0]["id"], b);
}

}  // namespace
}  // namespace lemma::server
