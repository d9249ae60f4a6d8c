// `lemma serve --data-parallel-size 2`: requests sharing a long prefix land on the replica that holds
// it (cached_tokens > 0 from the second on), round-robin scatters them, and every greedy answer is the
// one a single-engine server gives. /metrics carries each replica's series.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using json = nlohmann::json;

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

struct Answer {
  std::string text;
  int64_t cached_tokens = 0;
};

// Four requests, one at a time: two prefixes, each continued twice in a row (round-robin then
// alternates replicas within a prefix).
std::vector<Answer> answers(const std::string& extra_flags, std::string* metrics = nullptr) {
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 2 --max-num-seqs 4 " + extra_flags);
  EXPECT_TRUE(server.started()) << server.log();
  if (!server.started()) return {};
  const std::string prefix_a =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day, she saw a big red ball under a tree and wanted to play with it.";
  const std::string prefix_b =
      "Tom and his dog went to the beach. The sun was hot and the sand was soft. They ran to the water and "
      "jumped into the waves, laughing and splashing all day long.";
  std::vector<Answer> out;
  for (const std::string& prompt : {prefix_a + " Then", prefix_a + " Later", prefix_b + " Then", prefix_b + " Later"}) {
    const JsonReply r = post_json(server.port(), "/v1/completions",
                                  {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    if (r.status != 200) return {};
    out.push_back({r.body["choices"][0]["text"].get<std::string>(),
                   r.body["usage"].value("prompt_tokens_details", json::object()).value("cached_tokens", int64_t{0})});
  }
  if (metrics) *metrics = raw_http(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  return out;
}

TEST(ServeDataParallel, PrefixRoutingHitsTheCacheAndAnswersEqualOneEngine) {
  LEMMA_REQUIRE_SHARED(stories());
  const std::vector<Answer> single = answers("");
  std::string metrics;
  const std::vector<Answer> routed = answers("--data-parallel-size 2", &metrics);
  const std::vector<Answer> round_robin = answers("--data-parallel-size 2 --data-parallel-routing round-robin");
  ASSERT_EQ(single.size(), 4u);
  ASSERT_EQ(routed.size(), 4u);
  ASSERT_EQ(round_robin.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(routed[i].text, single[i].text) << "request " << i;
    EXPECT_EQ(round_robin[i].text, single[i].text) << "request " << i;
  }
  // The second request of each prefix finds it cached only where the router sent it back.
  EXPECT_GT(routed[1].cached_tokens, 0);
  EXPECT_GT(routed[3].cached_tokens, 0);
  EXPECT_EQ(round_robin[1].cached_tokens, 0) << "round-robin sent the second request to the other replica";
  EXPECT_EQ(round_robin[3].cached_tokens, 0);
  EXPECT_NE(metrics.find("lemma_replica_routed_requests_total{replica=\"0\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("lemma_replica_routed_requests_total{replica=\"1\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("lemma_replica_prefix_cache_hits_total{replica=\"0\"}"), std::string::npos);
}

TEST(ServeDataParallel, BadSettingsAreRefused) {
  LEMMA_REQUIRE_SHARED(stories());
  for (const std::string& flags : {std::string("--data-parallel-size 0"), std::string("--data-parallel-size 2 --data-parallel-routing random")}) {
    const CommandResult r = run_command(std::string(LEMMA_BINARY) + " serve --model " + shell_quote(stories()) + " --port 0 " + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_NE(r.err.find("--data-parallel"), std::string::npos) << flags << ": " << r.err;
  }
}

}  // namespace
}  // namespace lemma::testing
