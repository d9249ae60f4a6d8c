// Focused Jinja2 semantics: every snippet in data/semantics_cases.json was rendered by real
// Jinja2 3.1.2 in the transformers environment (make_semantics_cases.py); lemma must produce the
// same bytes, or fail with the same error type on the same template line. A few hand-written
// tests below cover the C++ API itself.
#include <gtest/gtest.h>

#include <thread>

#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/jinja/default_chat_template.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

std::string render(const std::string& source, nlohmann::ordered_json context = nlohmann::ordered_json::object(),
                   const std::string& name = "t") {
  ChatTemplateInputs in;
  in.extra_context = std::move(context);
  in.now = 0;
  return ChatTemplate(source, name).render(in);
}

// The references froze the clock at 2025-01-15 12:00:00 local time.
std::time_t frozen_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mday = 15;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

struct Outcome {
  bool ok = false;
  std::string text;  // output, or the error message
};

Outcome run_case(const nlohmann::ordered_json& c) {
  try {
    ChatTemplate tmpl(c.at("template").get<std::string>(), "case");
    ChatTemplateInputs in;
    in.extra_context = c.at("context");
    in.now = frozen_now();
    return {true, tmpl.render(in)};
  } catch (const TemplateError& e) {
    return {false, e.what()};
  }
}

// Runs every case of data/<file> and returns how many matched; failures are reported.
int run_case_file(const std::string& file, size_t min_cases) {
  const std::string path = std::string(LEMMA_JINJA_TEST_DATA) + "/" + file;
  const auto cases = nlohmann::ordered_json::parse(testing::read_file(path));
  EXPECT_GE(cases.size(), min_cases) << path;
  int passed = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    const Outcome got = run_case(c);
    const std::string shown_template = nlohmann::json(c.at("template").get<std::string>()).dump();
    if (c.contains("output")) {
      const std::string expected = c.at("output").get<std::string>();
      if (!got.ok) {
        ADD_FAILURE() << name << ": unexpected error " << got.text << "\n  template: " << shown_template;
      } else if (got.text != expected) {
        ADD_FAILURE() << name << ":\n  template: " << shown_template << "\n  expected: " << nlohmann::json(expected).dump()
                      << "\n  actual:   " << nlohmann::json(got.text).dump();
      } else {
        ++passed;
      }
      continue;
    }
    // Error case: same Python exception type, on the same template line.
    const std::string error = c.at("error").get<std::string>();
    const std::string type = error.substr(0, error.find(':'));
    const std::string where = "case:" + std::to_string(c.at("line").get<int>()) + ": ";
    if (got.ok) {
      ADD_FAILURE() << name << ": rendered [" << got.text << "] but Jinja2 raised " << error;
    } else if (got.text.rfind(where, 0) != 0 || got.text.find(type, where.size()) != where.size()) {
      ADD_FAILURE() << name << ": expected an error starting \"" << where << type << "\" (Jinja2: " << error
                    << "), got \"" << got.text << "\"";
    } else {
      ++passed;
    }
  }
  std::printf("%s: %d/%zu cases match Jinja2\n", file.c_str(), passed, cases.size());
  return passed;
}

TEST(JinjaSemantics, MatchesJinja2OnEverySnippet) { run_case_file("semantics_cases.json", 240); }

// Seeded random mixes of text and every whitespace-control marker (make_whitespace_cases.py).
TEST(JinjaSemantics, WhitespaceControlMatchesJinja2) { run_case_file("whitespace_cases.json", 400); }

// Seeded random expressions: operators, filters, tests, methods, undefined/None (make_expression_cases.py).
TEST(JinjaSemantics, RandomExpressionsMatchJinja2) { run_case_file("expression_cases.json", 800); }

TEST(JinjaSemantics, InputsAreVisible) {
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  in.add_generation_prompt = true;
  in.bos_token = "<s>";
  const std::string src =
      "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}"
      "{{ add_generation_prompt }}{{ tools is none }}{{ documents is none }}{{ eos_token is defined }}";
  EXPECT_EQ(ChatTemplate(src).render(in), "<s>user:hiTrueTrueTrueFalse");
}

TEST(JinjaSemantics, ToolsKeepTheirKeyOrder) {
  ChatTemplateInputs in;
  in.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "description": "d"}}])");
  EXPECT_EQ(ChatTemplate("{{ tools | tojson }}").render(in),
            R"([{"type": "function", "function": {"name": "f", "description": "d"}}])");
}

TEST(JinjaSemantics, StrftimeNowUsesTheGivenClock) {
  ChatTemplateInputs in;
  in.now = frozen_now();
  EXPECT_EQ(ChatTemplate("{{ strftime_now('%d %b %Y') }}").render(in), "15 Jan 2025");
}

TEST(JinjaSemantics, StrftimeNowDefaultsToTheRealClock) {
  const std::time_t before = std::time(nullptr);
  const std::string year = ChatTemplate("{{ strftime_now('%Y') }}").render(ChatTemplateInputs{});
  const std::time_t after = std::time(nullptr);
  std::tm a{}, b{};
  localtime_r(&before, &a);
  localtime_r(&after, &b);
  EXPECT_TRUE(year == std::to_string(a.tm_year + 1900) || year == std::to_string(b.tm_year + 1900)) << year;
}

TEST(JinjaSemantics, ExtraContextAddsAndOverridesVariables) {
  ChatTemplateInputs in;
  in.add_generation_prompt = true;
  in.extra_context = nlohmann::ordered_json::parse(R"({"enable_thinking": false, "add_generation_prompt": false})");
  EXPECT_EQ(ChatTemplate("{{ enable_thinking }}/{{ add_generation_prompt }}").render(in), "False/False");
}

TEST(JinjaSemantics, ErrorsNameTheTemplateAndLine) {
  try {
    render("line one\n{% if true %}\n{{ raise_exception('boom') }}\n{% endif %}", {}, "my.jinja");
    FAIL() << "expected a TemplateError";
  } catch (const TemplateError& e) {
    EXPECT_STREQ(e.what(), "my.jinja:3: TemplateError: boom");
  }
  try {
    ChatTemplate("ok\n{% for x in y %}", "broken");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("broken:2: TemplateSyntaxError:", 0), 0u) << e.what();
  }
}

TEST(JinjaSemantics, RenderIsConstAndThreadSafe) {
  const ChatTemplate tmpl(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + m.content | length %}{% endfor %}"
      "{{ ns.n }}");
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      ChatTemplateInputs in;
      in.messages = nlohmann::ordered_json::array();
      for (size_t i = 0; i <= t; ++i) in.messages.push_back({{"role", "user"}, {"content", "abc"}});
      for (int rep = 0; rep < 50; ++rep) results[t] = tmpl.render(in);
    });
  }
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < results.size(); ++t) EXPECT_EQ(results[t], std::to_string(3 * (t + 1)));
}

TEST(JinjaSemantics, DefaultChatTemplateIsChatML) {
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])");
  in.add_generation_prompt = true;
  EXPECT_EQ(ChatTemplate(kDefaultChatTemplate, "default").render(in),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
}

TEST(JinjaSemantics, PlainJsonInputsConvert) {
  ChatTemplateInputs in;
  in.messages = nlohmann::json::parse(R"([{"role": "user", "content": "x"}])");  // nlohmann::json converts
  EXPECT_EQ(ChatTemplate("{{ messages[0].content }}").render(in), "x");
}

}  // namespace
}  // namespace lemma
