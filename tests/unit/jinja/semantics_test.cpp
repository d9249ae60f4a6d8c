// Focused tests of Jinja2 semantics the chat templates rely on.
#include <gtest/gtest.h>

#include "lemma/tokenizer/jinja/chat_template.h"

namespace lemma {
namespace {

std::string render(const std::string& source, nlohmann::ordered_json context = nlohmann::ordered_json::object()) {
  ChatTemplateInputs in;
  in.extra_context = std::move(context);
  in.now = 0;
  return ChatTemplate(source, "t").render(in);
}

TEST(JinjaSemantics, Basics) { EXPECT_EQ(render("{{ 1 + 2 }}"), "3"); }

}  // namespace
}  // namespace lemma
