// `lemma generate --beams N`: beam search through the CLI on stories260K. One beam is greedy
// decoding; four beams find a hypothesis at least as likely (fixed length, length_penalty 1, so the
// score ranks by cumulative log-probability), and --json lists every hypothesis, best first.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

CommandResult lemma(const std::string& args) { return run_command(shell_quote(LEMMA_BINARY) + " " + args); }

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

nlohmann::json generate_json(const std::string& prompt, const std::string& flags) {
  const auto r = lemma("generate --json --ignore-eos --max-tokens 32 --threads 1 --model " + shell_quote(stories()) +
                       " --prompt " + shell_quote(prompt) + " " + flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(CliBeamSearch, OneBeamIsGreedyAndFourBeamsScoreAtLeastAsWell) {
  LEMMA_REQUIRE_SHARED(stories());
  for (const std::string prompt : {"Once upon a time", "The little dog saw", "Tom and Sue went to the"}) {
    SCOPED_TRACE(prompt);
    const auto greedy = generate_json(prompt, "--temperature 0");
    const auto one = generate_json(prompt, "--beams 1");
    const auto four = generate_json(prompt, "--beams 4");
    ASSERT_TRUE(greedy.contains("ids") && one.contains("beams") && four.contains("beams"));
    EXPECT_EQ(one["ids"], greedy["ids"]);
    EXPECT_EQ(one["text"], greedy["text"]);
    ASSERT_EQ(one["beams"].size(), 1u);
    ASSERT_EQ(four["beams"].size(), 4u);
    EXPECT_GE(four["cumulative_logprob"].get<double>(), one["cumulative_logprob"].get<double>() - 1e-9);
    EXPECT_EQ(four["ids"], four["beams"][0]["ids"]);
    EXPECT_EQ(four["text"], four["beams"][0]["text"]);
    for (size_t i = 0; i < 4; ++i) {
      const auto& b = four["beams"][i];
      EXPECT_EQ(b["ids"].size(), 32u);
      EXPECT_EQ(b["finish_reason"], "length");
      EXPECT_NEAR(b["score"].get<double>(), b["cumulative_logprob"].get<double>() / 32.0, 1e-9);
      if (i > 0) EXPECT_LE(b["score"].get<double>(), four["beams"][i - 1]["score"].get<double>());
    }
  }
}

TEST(CliBeamSearch, BadBeamFlagsAreRefusedByName) {
  LEMMA_REQUIRE_SHARED(stories());
  const std::string base = "generate --model " + shell_quote(stories()) + " --prompt hi ";
  const auto zero = lemma(base + "--beams 0");
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.err.find("--beams"), std::string::npos) << zero.err;
  const auto orphan = lemma(base + "--length-penalty 2");
  EXPECT_NE(orphan.exit_code, 0);
  EXPECT_NE(orphan.err.find("--beams"), std::string::npos) << orphan.err;
}

}  // namespace
}  // namespace lemma::testing
