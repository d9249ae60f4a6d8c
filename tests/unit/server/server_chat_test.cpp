// Chat prompts through a model's own template, template errors, echo and /tokenize of messages.
#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

constexpr const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}";

TEST_F(ServerTest, ChatUsesTheModelsTemplateWhenGiven) {
  start(ChatTemplate(kTemplate, "test"));
  json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  auto r = post_json(port_, "/v1/chat/completions", {{"messages", messages}, {"max_tokens", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::string bos(tokenizer_->token_text(*tokenizer_->bos_id()));
  EXPECT_EQ(engine_.requests().at(0).prompt_ids, tokenizer_->encode(bos + "[user]Hi\n[assistant]", false, true));
  auto t = post_json(port_, "/tokenize", {{"messages", messages}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.json()["tokens"].get<std::vector<int32_t>>(), engine_.requests().at(0).prompt_ids);
}

TEST_F(ServerTest, TemplateErrorsAre400) {
  start(ChatTemplate("{{ raise_exception('only user turns') }}", "strict"));
  auto r = post_json(port_, "/v1/chat/completions", {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("only user turns"), std::string::npos) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "messages");
  EXPECT_TRUE(engine_.requests().empty());
}

TEST_F(ServerTest, EchoPrependsThePrompt) {
  start();
  auto r = post_json(port_, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}, {"echo", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["choices"][0]["text"], "Once" + decode_script(3));
}

}  // namespace
}  // namespace lemma::server::testing
