// Hostile or broken templates must fail with TemplateError (never crash, hang or throw
// anything else): mutated real templates, deep nesting, runaway recursion, huge literals.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "lemma/tokenizer/jinja/chat_template.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

// Renders `source` and reports what happened: "ok", "template-error", or "other: <what>".
std::string outcome(const std::string& source, const ChatTemplateInputs& in) {
  try {
    ChatTemplate(source, "fuzz").render(in);
    return "ok";
  } catch (const TemplateError&) {
    return "template-error";
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

ChatTemplateInputs sample_inputs() {
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
          {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function",
           "function": {"name": "f", "arguments": {"a": 1}}}]},
          {"role": "tool", "tool_call_id": "c", "content": "r"}])");
  in.tools = nlohmann::ordered_json::parse(
      R"([{"type": "function", "function": {"name": "f", "description": "d",
           "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}])");
  in.add_generation_prompt = true;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  in.now = 0;
  return in;
}

TEST(JinjaRobustness, MutatedRealTemplatesFailCleanly) {
  const char* env_trials = std::getenv("LEMMA_JINJA_FUZZ_TRIALS");  // more mutations per template on demand
  const int kTrials = env_trials ? std::atoi(env_trials) : 12;
  const auto dir = testing::shared_data("chat_templates");
  LEMMA_REQUIRE_SHARED(dir);
  std::mt19937 rng(1234);
  const auto in = sample_inputs();
  const std::string alphabet = "{}%#-+()[]'\".,:|~ \n\tabcxyz019_=<>!*/";
  int runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") continue;
    const std::string original = testing::read_file(entry.path());
    for (int trial = 0; trial < kTrials; ++trial) {
      std::string s = original;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t pos = rng() % s.size();
        switch (rng() % 3) {
          case 0: s.erase(pos, 1 + rng() % 8); break;
          case 1: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
          default: s[pos] = alphabet[rng() % alphabet.size()];
        }
      }
      const std::string got = outcome(s, in);
      ASSERT_TRUE(got == "ok" || got == "template-error") << entry.path().filename() << " trial " << trial << ": " << got;
      ++runs;
    }
  }
  EXPECT_GT(runs, 500);
}

TEST(JinjaRobustness, LimitsAreErrorsNotCrashes) {
  const auto in = sample_inputs();
  EXPECT_EQ(outcome("{{ " + std::string(100000, '(') + "1 }}", in), "template-error");
  EXPECT_EQ(outcome("{{ " + std::string(50000, '[') + " }}", in), "template-error");
  EXPECT_EQ(outcome(std::string(5000, '{') + "% if 1 %}", in), "template-error");
  std::string nested_ifs;
  for (int i = 0; i < 20000; ++i) nested_ifs += "{% if true %}";
  EXPECT_EQ(outcome(nested_ifs, in), "template-error");
  EXPECT_EQ(outcome("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", in), "template-error");
  EXPECT_EQ(outcome("{{ 99999999999999999999999 }}", in), "template-error");
  EXPECT_EQ(outcome("{{ 1e999999 }}", in), "ok");  // inf, as Python's float literal
  EXPECT_EQ(outcome("{{ range(1000000) | length }}", in), "template-error");
  EXPECT_EQ(outcome("{{ 'x' * 9223372036854775807 }}", in), "template-error");
  EXPECT_EQ(outcome("{{ messages[9223372036854775807] }}{{ messages[-9223372036854775807] }}", in), "ok");
  EXPECT_EQ(outcome("{{ (-9223372036854775807 - 1) // -1 }}", in), "template-error");
  EXPECT_EQ(outcome("{{ '%d' % 'x' }}", in), "template-error");
  EXPECT_EQ(outcome("{{ '{'.format(1) }}", in), "template-error");
  EXPECT_EQ(outcome("{{ 'abc'[::0] }}", in), "template-error");
  EXPECT_EQ(outcome("{{ 'a'.split('') }}", in), "template-error");
}

}  // namespace
}  // namespace lemma
