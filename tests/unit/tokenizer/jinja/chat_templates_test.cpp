// Renders every real chat template in shared/data/chat_templates for its 7 cases and compares
// byte for byte with Jinja2's output (or expects a TemplateError where Jinja2 raised).
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "lemma/tokenizer/jinja/chat_template.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

// The references froze strftime_now's clock at 2025-01-15 12:00:00 local time.
std::time_t frozen_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

std::string describe_difference(const std::string& expected, const std::string& actual) {
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  size_t from = i > 60 ? i - 60 : 0;
  auto excerpt = [&](const std::string& s) {
    return nlohmann::json(s.substr(std::min(from, s.size()), 140)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  return "first difference at byte " + std::to_string(i) + " (expected " + std::to_string(expected.size()) +
         " bytes, got " + std::to_string(actual.size()) + ")\n  expected: " + excerpt(expected) +
         "\n  actual:   " + excerpt(actual);
}

ChatTemplateInputs inputs_for(const nlohmann::ordered_json& c) {
  ChatTemplateInputs in;
  in.messages = c.at("conversation");
  in.tools = c.at("tools");
  in.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  if (!c.at("bos_token").is_null()) in.bos_token = c.at("bos_token").get<std::string>();
  if (!c.at("eos_token").is_null()) in.eos_token = c.at("eos_token").get<std::string>();
  in.now = frozen_now();
  return in;
}

TEST(ChatTemplates, EveryTemplateAndCaseMatchesJinja2) {
  const auto dir = testing::shared_data("chat_templates");
  LEMMA_REQUIRE_SHARED(dir);
  std::vector<std::filesystem::path> templates;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".jinja") templates.push_back(entry.path());
  }
  std::sort(templates.begin(), templates.end());
  ASSERT_GE(templates.size(), 50u);
  int passed = 0, total = 0;
  std::vector<std::string> failures;
  for (const auto& path : templates) {
    const std::string name = path.stem().string();
    const auto expected_path = dir / (name + ".expected.json");
    ASSERT_TRUE(std::filesystem::exists(expected_path)) << expected_path;
    const auto cases = nlohmann::ordered_json::parse(testing::read_file(expected_path));
    std::unique_ptr<ChatTemplate> tmpl;
    try {
      tmpl = std::make_unique<ChatTemplate>(testing::read_file(path), name);
    } catch (const TemplateError& e) {
      failures.push_back(name + ": does not parse: " + e.what());
      total += static_cast<int>(cases.size());
      continue;
    }
    for (const auto& c : cases) {
      ++total;
      const std::string label = name + " / " + c.at("case").get<std::string>();
      const auto in = inputs_for(c);
      if (c.contains("error")) {
        try {
          std::string out = tmpl->render(in);
          failures.push_back(label + ": rendered, but Jinja2 raised " + c["error"].get<std::string>());
        } catch (const TemplateError& e) {
          const std::string msg = e.what();
          const std::string prefix = name + ":";
          bool has_line = msg.rfind(prefix, 0) == 0 && msg.size() > prefix.size() &&
                          std::isdigit(static_cast<unsigned char>(msg[prefix.size()])) && msg[prefix.size()] != '0';
          if (has_line) ++passed;
          else failures.push_back(label + ": error without a line number: " + msg);
        }
        continue;
      }
      try {
        const std::string out = tmpl->render(in);
        const std::string expected = c.at("output").get<std::string>();
        if (out == expected) ++passed;
        else failures.push_back(label + ": " + describe_difference(expected, out));
      } catch (const TemplateError& e) {
        failures.push_back(label + ": unexpected error: " + e.what());
      }
    }
  }
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::printf("chat templates: %d/%d cases match Jinja2\n", passed, total);
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace lemma
