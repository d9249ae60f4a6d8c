// `lemma serve --disaggregate-prefill`: prompts computed on the prefill engine and handed to the decode
// engine as KV blocks give the answers of one colocated engine on a mixed workload (greedy, seeded
// with several choices, short prompts that go straight to decode, chat); /metrics counts the handoffs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using json = nlohmann::json;

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

std::vector<json> answers(const std::string& extra_flags, std::string* metrics = nullptr) {
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 2 --max-num-seqs 8 --seed 5 " +
                      extra_flags);
  EXPECT_TRUE(server.started()) << server.log();
  if (!server.started()) return {};
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day, she saw a big red ball under a tree.";
  const std::vector<std::pair<std::string, json>> requests = {
      {"/v1/completions", {{"prompt", story}, {"max_tokens", 40}, {"temperature", 0}, {"ignore_eos", true}}},
      {"/v1/completions", {{"prompt", story + " Then"}, {"max_tokens", 30}, {"temperature", 0.9}, {"seed", 3}, {"n", 2}}},
      {"/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 10}, {"temperature", 0}}},
      {"/v1/completions", {{"prompt", story + " Later"}, {"max_tokens", 20}, {"temperature", 0.7}}},  // server seed
      {"/v1/chat/completions",
       {{"messages", json::array({{{"role", "user"}, {"content", story}}})}, {"max_tokens", 20}, {"temperature", 0}}},
  };
  std::vector<json> out;
  for (const auto& [path, body] : requests) {
    const JsonReply r = post_json(server.port(), path, body);
    EXPECT_EQ(r.status, 200) << path << " " << r.body.dump();
    json choices = r.body.value("choices", json::array());
    for (json& c : choices) c.erase("logprobs");
    out.push_back(choices);
  }
  if (metrics) *metrics = raw_http(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  return out;
}

TEST(ServeDisaggregated, AnswersEqualColocatedServing) {
  LEMMA_REQUIRE_SHARED(stories());
  const std::vector<json> colocated = answers("");
  std::string metrics;
  const std::vector<json> split = answers("--disaggregate-prefill --prefill-threads 1", &metrics);
  ASSERT_EQ(colocated.size(), 5u);
  ASSERT_EQ(split.size(), 5u);
  for (std::size_t i = 0; i < colocated.size(); ++i) EXPECT_EQ(split[i], colocated[i]) << "request " << i;
  const std::string name = "\nlemma_kv_handoffs_total ";
  const std::size_t at = metrics.find(name);
  ASSERT_NE(at, std::string::npos) << metrics;
  // The story and the chat prompt travel; the two story continuations find the story's blocks already in
  // the decode engine (only what it lacks travels: here nothing).
  EXPECT_GE(std::stod(metrics.substr(at + name.size())), 2.0) << "the long prompts were handed over";
  EXPECT_NE(metrics.find("lemma_kv_handoff_bytes_total"), std::string::npos);
}

TEST(ServeDisaggregated, BadSettingsAreRefused) {
  LEMMA_REQUIRE_SHARED(stories());
  for (const std::string& flags : {std::string("--disaggregate-prefill --data-parallel-size 2"),
                                   std::string("--disaggregate-prefill --threads 2 --prefill-threads 2"),
                                   std::string("--disaggregate-prefill --no-prefix-caching")}) {
    const CommandResult r = run_command(std::string(LEMMA_BINARY) + " serve --model " + shell_quote(stories()) + " --port 0 " + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_NE(r.err.find("-prefill"), std::string::npos) << flags << ": " << r.err;
  }
}

}  // namespace
}  // namespace lemma::testing
