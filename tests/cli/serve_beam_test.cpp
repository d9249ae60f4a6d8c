// Beam search through the real server and engine (stories260K): vLLM's use_beam_search / best_of /
// length_penalty / early_stopping on both endpoints give n choices, best first, the same
// hypotheses `lemma generate --beams` finds; impossible combinations are 400s naming the field,
// and the server keeps serving.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using json = nlohmann::json;

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

using Reply = JsonReply;

Reply post(uint16_t port, const std::string& path, const json& body) { return post_json(port, path, body); }

TEST(ServeBeamSearch, ChoicesAreTheBestHypothesesBestFirst) {
  LEMMA_REQUIRE_SHARED(stories());
  const std::string prompt = "Once upon a time";
  const auto cli = run_command(shell_quote(LEMMA_BINARY) + " generate --json --ignore-eos --max-tokens 20 --threads 1 "
                               "--beams 3 --length-penalty 0.8 --model " + shell_quote(stories()) + " --prompt " +
                               shell_quote(prompt));
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const json expected = json::parse(cli.out)["beams"];
  ASSERT_EQ(expected.size(), 3u);

  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1 --max-num-seqs 8");
  ASSERT_TRUE(server.started()) << server.log();
  const uint16_t port = server.port();
  const json body = {{"prompt", prompt}, {"max_tokens", 20}, {"ignore_eos", true}, {"use_beam_search", true},
                     {"best_of", 3}, {"n", 2}, {"length_penalty", 0.8}, {"temperature", 0.9}};
  auto r = post(port, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  ASSERT_EQ(r.body["choices"].size(), 2u) << r.body.dump();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.body["choices"][i]["index"], i);
    EXPECT_EQ(r.body["choices"][i]["text"], expected[i]["text"]) << "choice " << i;
    EXPECT_EQ(r.body["choices"][i]["finish_reason"], "length");
  }
  EXPECT_EQ(r.body["usage"]["completion_tokens"], 40);
  // Deterministic: the same request gives the same choices, whatever else ran before.
  const auto again = post(port, "/v1/completions", body);
  EXPECT_EQ(again.body["choices"], r.body["choices"]);

  r = post(port, "/v1/chat/completions",
           {{"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})}, {"max_tokens", 12},
            {"use_beam_search", true}, {"n", 3}, {"early_stopping", "never"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["choices"].size(), 3u);

  // Refused by name; the server goes on serving.
  r = post(port, "/v1/completions", {{"prompt", "x"}, {"use_beam_search", true}, {"stream", true}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "stream") << r.body.dump();
  r = post(port, "/v1/completions", {{"prompt", "x"}, {"use_beam_search", true}, {"best_of", 2}, {"n", 3}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "n") << r.body.dump();
  r = post(port, "/v1/completions", {{"prompt", "x"}, {"use_beam_search", true}, {"best_of", 9}});  // > max-num-seqs
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "best_of") << r.body.dump();
  r = post(port, "/v1/completions", {{"prompt", "x"}, {"n", 1}, {"best_of", 2}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["param"], "best_of") << r.body.dump();
  EXPECT_EQ(post(port, "/v1/completions", body).body["choices"], again.body["choices"]);
}

}  // namespace
}  // namespace lemma::testing
