// Every shared chat template rendered with more conversations than the 7 shipped cases
// (reasoning, multimodal lists, string/parallel tool calls, richer schemas, enable_thinking):
// the expected renders come from real Jinja2 via make_template_variations.py and are stored
// as length + FNV-1a 64 of the UTF-8 output; errors as type + template line.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>

#include "lemma/tokenizer/jinja/chat_template.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

std::string fnv1a64(const std::string& data) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

std::time_t frozen_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mday = 15;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

TEST(ChatTemplateVariations, MatchJinja2) {
  const auto dir = testing::shared_data("chat_templates");
  LEMMA_REQUIRE_SHARED(dir);
  const auto cases = nlohmann::ordered_json::parse(
      testing::read_file(std::string(LEMMA_JINJA_TEST_DATA) + "/template_variations.json"));
  ASSERT_GE(cases.size(), 500u);
  std::map<std::string, std::unique_ptr<ChatTemplate>> templates;
  int passed = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("template").get<std::string>();
    const std::string label = name + " / " + c.at("case").get<std::string>();
    auto& tmpl = templates[name];
    if (!tmpl) tmpl = std::make_unique<ChatTemplate>(testing::read_file(dir / (name + ".jinja")), name);
    ChatTemplateInputs in;
    in.messages = c.at("messages");
    in.tools = c.at("tools");
    in.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    if (!c.at("bos_token").is_null()) in.bos_token = c.at("bos_token").get<std::string>();
    if (!c.at("eos_token").is_null()) in.eos_token = c.at("eos_token").get<std::string>();
    in.extra_context = c.at("extra");
    in.now = frozen_now();
    std::string out, error;
    try {
      out = tmpl->render(in);
    } catch (const TemplateError& e) {
      error = e.what();
    }
    if (c.contains("error")) {
      const std::string expected = c.at("error").get<std::string>();
      const std::string where = name + ":" + std::to_string(c.at("line").get<int>()) + ": " +
                                expected.substr(0, expected.find(':'));
      if (error.rfind(where, 0) == 0) {
        ++passed;
      } else {
        ADD_FAILURE() << label << ": Jinja2 raised \"" << expected << "\" (line " << c.at("line") << "), lemma "
                      << (error.empty() ? "rendered" : "raised \"" + error + "\"");
      }
      continue;
    }
    const bool same = error.empty() && out.size() == c.at("output_length").get<size_t>() &&
                      fnv1a64(out) == c.at("output_fnv1a64").get<std::string>();
    if (same) {
      ++passed;
    } else {
      ADD_FAILURE() << label << ": differs from Jinja2 (see: make_template_variations.py --show " << name << " "
                    << c.at("case").get<std::string>() << ")\n"
                    << (error.empty() ? "lemma rendered:\n" + out : "lemma raised: " + error);
    }
  }
  std::printf("chat template variations: %d/%zu match Jinja2\n", passed, cases.size());
}

}  // namespace
}  // namespace lemma
