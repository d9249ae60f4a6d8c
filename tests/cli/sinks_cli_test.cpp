// Attention sinks (G10) from outside, on stories260K against golden sinks/stories260K-s4-w60.json
// (float64 reference, shared/tools/sink_attention_ref.py): `lemma logits --attention-sinks 4
// --streaming-window 60` prints the reference's logits of streaming the 300 ids one per step;
// `lemma generate` and `lemma serve` (request fields, or the server's default) decode greedily
// along the reference's argmax; bad values are clear errors (exit 1, or 400 naming the field).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using json = nlohmann::json;

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }
std::string golden_path() { return shared_data("golden/sinks/stories260K-s4-w60.json").string(); }

const json& golden() {
  static const json g = json::parse(std::ifstream(golden_path()));
  return g;
}

std::string lemma(const std::string& args) {
  return shell_quote(LEMMA_BINARY) + " " + args + " --model " + shell_quote(stories());
}

constexpr int kSteps = 87;  // the reference's argmax follows its ids for 86 steps (22 past S + W)

std::vector<int32_t> golden_argmax(size_t n) {
  const auto all = golden()["argmax"].get<std::vector<int32_t>>();
  return {all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n)};
}

#define REQUIRE_DATA()                  \
  LEMMA_REQUIRE_SHARED(stories());      \
  LEMMA_REQUIRE_SHARED(golden_path())

TEST(SinksCli, LogitsAreTheReferencesStream) {
  REQUIRE_DATA();
  std::string ids;
  for (int32_t id : golden()["tokens"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const auto r = run_command(lemma("logits --attention-sinks 4 --streaming-window 60 --ids " + ids));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json got = json::parse(r.out);
  const json& want = golden()["logits"];
  ASSERT_EQ(got.size(), want.size());
  const double tolerance = 1e-4 * golden()["max_abs_logit"].get<double>() + 1e-5;
  double worst = 0.0;
  for (size_t t = 0; t < want.size(); ++t)
    for (size_t v = 0; v < want[t].size(); ++v)
      worst = std::max(worst, std::abs(got[t][v].get<double>() - want[t][v].get<double>()));
  EXPECT_LE(worst, tolerance);
}

TEST(SinksCli, GenerateFollowsTheReferenceAndBadFlagsAreErrors) {
  REQUIRE_DATA();
  const auto r = run_command(lemma("generate --json --prompt-ids 1 --temperature 0 --ignore-eos --threads 1 "
                                   "--attention-sinks 4 --streaming-window 60 --max-tokens " +
                                   std::to_string(kSteps)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"].get<std::vector<int32_t>>(), golden_argmax(kSteps));

  const auto error_of = [](const std::string& args) {
    const auto e = run_command(lemma("generate --prompt-ids 1 --max-tokens 4 " + args));
    EXPECT_EQ(e.exit_code, 1) << args;
    return e.err;
  };
  EXPECT_NE(error_of("--streaming-window 0").find("--streaming-window must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(error_of("--attention-sinks 4").find("--attention-sinks needs --streaming-window"), std::string::npos);
  EXPECT_NE(error_of("--attention-sinks -1 --streaming-window 8").find("--attention-sinks must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of("--attention-sinks 4 --streaming-window 100000").find("exceeds the context"), std::string::npos);
  EXPECT_NE(error_of("--streaming-window 8 --speculative-method ngram --num-speculative-tokens 2")
                .find("speculative decoding is not supported with attention sinks"),
            std::string::npos);
  EXPECT_NE(error_of("--streaming-window 8 --beams 2").find("beam search is not supported with attention sinks"),
            std::string::npos);
}

TEST(SinksCli, ServeTakesTheFieldsAndADefault) {
  REQUIRE_DATA();
  const json request = {{"prompt", json::array({1})}, {"max_tokens", kSteps}, {"temperature", 0},
                        {"ignore_eos", true}};
  const auto cli = run_command(lemma("generate --json --prompt-ids 1 --temperature 0 --ignore-eos --threads 1 "
                                     "--attention-sinks 4 --streaming-window 60 --max-tokens " +
                                     std::to_string(kSteps)));
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const std::string want_text = json::parse(cli.out)["text"];
  {
    ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1");
    ASSERT_TRUE(server.started()) << server.log();
    json body = request;
    body["attention_sinks"] = 4;
    body["streaming_window"] = 60;
    auto r = post_json(server.port(), "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["choices"][0]["text"], want_text);
    // Without the fields: full attention, another continuation past S + W.
    r = post_json(server.port(), "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_NE(r.body["choices"][0]["text"], want_text);
    for (const auto& [fields, param] : std::vector<std::pair<json, std::string>>{
             {{{"streaming_window", 0}}, "streaming_window"},
             {{{"attention_sinks", -1}, {"streaming_window", 60}}, "attention_sinks"},
             {{{"attention_sinks", 4}}, "attention_sinks"},
             {{{"attention_sinks", 4}, {"streaming_window", 100000}}, "streaming_window"}}) {
      json bad = request;
      bad.update(fields);
      r = post_json(server.port(), "/v1/completions", bad);
      EXPECT_EQ(r.status, 400) << fields.dump();
      EXPECT_EQ(r.body["error"]["param"], param) << r.body.dump();
    }
  }
  ServeProcess server("--model " + shell_quote(stories()) +
                      " --port 0 --threads 1 --attention-sinks 4 --streaming-window 60");
  ASSERT_TRUE(server.started()) << server.log();
  const auto r = post_json(server.port(), "/v1/completions", request);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["choices"][0]["text"], want_text);
}

}  // namespace
}  // namespace lemma::testing
