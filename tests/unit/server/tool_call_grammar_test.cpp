// Tool-call grammars over real vocabularies (Qwen3 for Hermes, Llama 3 for its JSON calls) and a
// Mistral-style vocabulary with [TOOL_CALLS] / [ARGS] / [CALL_ID] as special tokens: under
// tool_choice auto free text goes through untouched until the call marker, then only calls of the
// tools' schemas; what the model writes then parses back into the call. Forced Mistral calls in the
// name[ARGS] form start with the marker token.
#include "lemma/server/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "lemma/grammar/tokenizer_vocabulary.h"
#include "lemma/server/api_error.h"
#include "support/shared_data.h"

namespace lemma::server {
namespace {

using json = nlohmann::ordered_json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time",
   "parameters": {"type": "object", "properties": {"zone": {"type": "string", "enum": ["utc", "cet"]}}, "required": ["zone"]}}}])");

// Feeds `ids` one by one: each must be in the mask and accepted. Returns how many were.
size_t walk(grammar::ConstraintState& state, const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!grammar::mask_allows(state.allowed(), ids[i]) || !state.accept(ids[i])) return i;
  }
  return ids.size();
}

// Whether `text` (tokenised by `tok`) is read whole by a fresh state of `constraint`.
bool reads(const grammar::TokenConstraint& constraint, const Tokenizer& tok, const std::string& text, bool complete) {
  grammar::ConstraintState state(constraint);
  const auto ids = tok.encode(text, false, false);
  return walk(state, ids) == ids.size() && (!complete || state.is_complete());
}

TEST(ToolCallGrammar, HermesAutoIsFreeTextUntilTheMarkerThenOnlyCalls) {
  const auto dir = testing::shared_data("hf/qwen3");
  LEMMA_REQUIRE_SHARED(dir);
  const Tokenizer tok = Tokenizer::from_hf_dir(dir.string());
  const auto vocab = grammar::vocabulary_index(tok);
  const auto lazy = compile_lazy_tool_calls(kTools, {ToolCallFormat::kHermes}, true, vocab);
  ASSERT_NE(lazy, nullptr);
  {  // The first mask of free text walks the whole vocabulary; a figure for docs/performance.md.
    grammar::ConstraintState state(*lazy);
    const auto start = std::chrono::steady_clock::now();
    const auto& mask = state.allowed();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    size_t allowed = 0;
    for (uint64_t w : mask) allowed += size_t(__builtin_popcountll(w));
    std::printf("qwen3 free-text mask: %zu of %d tokens allowed, first mask %.1f ms\n", allowed, tok.vocab_size(), ms);
    EXPECT_GT(allowed, size_t(tok.vocab_size()) * 9 / 10);
  }
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  const std::string prose = "<think>\nThe user wants <tool calls> and <tool_cal x; a {\"name\" is fine here.\n</think>\n\n";
  EXPECT_TRUE(reads(*lazy, tok, prose, true));  // text, thinking, partial markers: untouched
  EXPECT_TRUE(reads(*lazy, tok, "Héllo 🙂 wörld", true));
  EXPECT_TRUE(reads(*lazy, tok, prose + call, true));
  EXPECT_TRUE(reads(*lazy, tok, prose + call + "\n" + call, true));  // parallel calls
  EXPECT_FALSE(reads(*lazy, tok, prose + call + "\nand then text", false));  // nothing but calls after one
  // Once the marker is written, only well-formed calls of the tools.
  EXPECT_FALSE(reads(*lazy, tok, "<tool_call>\nhello", false));
  EXPECT_FALSE(reads(*lazy, tok, "<tool_call>\n{\"name\": \"delete_all\"", false));
  EXPECT_FALSE(reads(*lazy, tok, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"pst\"", false));
  EXPECT_TRUE(reads(*lazy, tok, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"cet\"}}\n</tool_call>", true));
  // A call not yet closed is not complete: the end token is refused until it is.
  grammar::ConstraintState state(*lazy);
  ASSERT_EQ(walk(state, tok.encode("<tool_call>\n{\"name\": \"get_weather\"", false, false)), tok.encode("<tool_call>\n{\"name\": \"get_weather\"", false, false).size());
  EXPECT_FALSE(state.is_complete());
  // parallel_tool_calls false: one call.
  const auto single = compile_lazy_tool_calls(kTools, {ToolCallFormat::kHermes}, false, vocab);
  EXPECT_TRUE(reads(*single, tok, call, true));
  EXPECT_FALSE(reads(*single, tok, call + "\n" + call, false));
}

TEST(ToolCallGrammar, Llama3AutoIsTextOrAWholeMessageOfCalls) {
  const auto dir = testing::shared_data("hf/llama3");
  LEMMA_REQUIRE_SHARED(dir);
  const Tokenizer tok = Tokenizer::from_hf_dir(dir.string());
  const auto vocab = grammar::vocabulary_index(tok);
  const auto lazy = compile_lazy_tool_calls(kTools, {ToolCallFormat::kLlama3Json}, true, vocab);
  ASSERT_NE(lazy, nullptr);
  const std::string call = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
  EXPECT_TRUE(reads(*lazy, tok, "It is sunny in Paris.", true));
  EXPECT_TRUE(reads(*lazy, tok, "{\"answer\": 4}", true));  // JSON that does not open as a call is text
  EXPECT_TRUE(reads(*lazy, tok, call, true));
  EXPECT_TRUE(reads(*lazy, tok, "\n" + call + "; " + call, true));
  EXPECT_FALSE(reads(*lazy, tok, "{\"name\": \"nope\"", false));
  EXPECT_FALSE(reads(*lazy, tok, "{ \"name\": \"get_weather\", \"parameters\": {\"town\"", false));
  EXPECT_FALSE(reads(*lazy, tok, call + " and text", false));
}

// A Mistral-style vocabulary: the markers as special tokens, </s> ending, printable ASCII bytes.
std::shared_ptr<const grammar::VocabularyIndex> mistral_vocabulary() {
  grammar::TokenVocabulary v;
  for (const char* special : {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "</s>"}) {
    v.bytes.emplace_back();
    v.special.push_back(true);
    v.special_text.emplace_back(special);
  }
  v.end_ids = {3};
  for (int c = 0x20; c < 0x7F; ++c) {
    v.bytes.emplace_back(1, static_cast<char>(c));
    v.special.push_back(false);
    v.special_text.emplace_back();
  }
  v.bytes.emplace_back("\n");
  v.special.push_back(false);
  v.special_text.emplace_back();
  return std::make_shared<const grammar::VocabularyIndex>(v);
}

// Text -> ids of the vocabulary above (markers as their tokens), and back as the server decodes it.
std::vector<int32_t> mistral_ids(const std::string& text) {
  std::vector<int32_t> ids;
  for (size_t at = 0; at < text.size();) {
    bool marker = false;
    int32_t id = 0;
    for (const char* m : {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"}) {
      if (text.compare(at, std::strlen(m), m) == 0) {
        ids.push_back(id);
        at += std::strlen(m);
        marker = true;
        break;
      }
      ++id;
    }
    if (marker) continue;
    ids.push_back(text[at] == '\n' ? 4 + 0x5F : 4 + (text[at] - 0x20));
    ++at;
  }
  return ids;
}

bool mistral_reads(const grammar::TokenConstraint& c, const std::string& text, bool complete) {
  grammar::ConstraintState state(c);
  const auto ids = mistral_ids(text);
  return walk(state, ids) == ids.size() && (!complete || state.is_complete());
}

TEST(ToolCallGrammar, MistralAutoAndForcedInTheNameArgsForms) {
  const auto vocab = mistral_vocabulary();
  const ToolCallSyntax with_id{ToolCallFormat::kMistral, MistralCallForm::kNameCallIdArgs};
  const auto lazy = compile_lazy_tool_calls(kTools, with_id, true, vocab);
  ASSERT_NE(lazy, nullptr);
  const std::string call = "[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{\"city\": \"Paris\"}";
  EXPECT_TRUE(mistral_reads(*lazy, "Let me look.", true));
  EXPECT_TRUE(mistral_reads(*lazy, "Let me look." + call, true));
  EXPECT_TRUE(mistral_reads(*lazy, call + "[TOOL_CALLS]get_time[ARGS]{\"zone\": \"utc\"}", true));  // id optional
  {  // The marker's text written as plain bytes never goes by as content (the parser would take it for a call).
    grammar::ConstraintState state(*lazy);
    std::vector<int32_t> bytes;
    for (char c : std::string("text [TOOL_CALLS]")) bytes.push_back(4 + (c - 0x20));
    EXPECT_EQ(walk(state, bytes), bytes.size() - 1);
  }
  EXPECT_FALSE(mistral_reads(*lazy, "[TOOL_CALLS]get_weather[CALL_ID]short[ARGS]", false));  // ids are 9 alphanumerics
  EXPECT_FALSE(mistral_reads(*lazy, "[TOOL_CALLS]get_weather[ARGS]{\"town\"", false));
  const AssistantOutput parsed = parse_tool_calls(ToolCallFormat::kMistral, "Let me look." + call);
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, "{\"city\": \"Paris\"}");

  // Forced (Devstral / Ministral 3: name[ARGS]): the marker token first, then the named function.
  const ToolCallSyntax plain{ToolCallFormat::kMistral, MistralCallForm::kNameArgs};
  const auto forced = compile_forced_tool_call(kTools, "get_time", plain, vocab);
  grammar::ConstraintState state(*forced);
  for (int32_t id = 0; id < vocab->vocab.size(); ++id) EXPECT_EQ(grammar::mask_allows(state.allowed(), id), id == 0) << id;
  EXPECT_TRUE(mistral_reads(*forced, "[TOOL_CALLS]get_time[ARGS]{\"zone\": \"utc\"}", true));
  EXPECT_FALSE(mistral_reads(*forced, "[TOOL_CALLS]get_weather", false));
  EXPECT_FALSE(mistral_reads(*forced, "[TOOL_CALLS]get_time[ARGS]{\"zone\": \"utc\"}[TOOL_CALLS]", false));  // one call
}

TEST(ToolCallGrammar, MistralCallFormsAreReadFromTheTemplates) {
  for (const auto& [file, form] : {std::pair{"Mistral-Small-3.2-24B-Instruct-2506", MistralCallForm::kNameCallIdArgs},
                                   std::pair{"mistralai-Ministral-3-14B-Reasoning-2512", MistralCallForm::kNameArgs},
                                   std::pair{"unsloth-mistral-Devstral-Small-2507", MistralCallForm::kNameArgs}}) {
    const auto path = testing::shared_data(std::string("chat_templates/") + file + ".jinja");
    LEMMA_REQUIRE_SHARED(path);
    const std::string source = testing::read_file(path);
    EXPECT_EQ(detect_tool_call_format(source), ToolCallFormat::kMistral) << file;
    EXPECT_EQ(detect_mistral_call_form(source), form) << file;
  }
  EXPECT_EQ(detect_mistral_call_form("{{ '[TOOL_CALLS]' + tool_calls|tojson }}"), MistralCallForm::kJsonArray);
}

TEST(ToolCallGrammar, FormatsWithoutAGrammarAreRefusedWhenForcedAndUnconstrainedOnAuto) {
  EXPECT_EQ(compile_lazy_tool_calls(kTools, {ToolCallFormat::kNone}, true, mistral_vocabulary()), nullptr);
  try {
    compile_forced_tool_call(kTools, "", {ToolCallFormat::kNone}, mistral_vocabulary());
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "tool_choice");
  }
  // A schema keyword lemma cannot honour: auto falls back to unconstrained text, forced is a 400.
  const json odd = json::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}}}}}])");
  EXPECT_EQ(compile_lazy_tool_calls(odd, {ToolCallFormat::kHermes}, true, mistral_vocabulary()), nullptr);
  EXPECT_THROW(compile_forced_tool_call(odd, "", {ToolCallFormat::kHermes}, mistral_vocabulary()), ApiError);
  // Qwen3-Coder / Qwen3.5 write XML calls: no JSON format is detected (nothing parsed or forced).
  EXPECT_EQ(detect_tool_call_format("<tool_call>\n<function={{ name }}>"), ToolCallFormat::kNone);
}

}  // namespace
}  // namespace lemma::server
