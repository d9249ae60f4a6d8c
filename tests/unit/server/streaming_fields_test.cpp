// Attention sinks (G10) request fields: "attention_sinks" / "streaming_window" parse into the
// request's StreamingWindow, fill in from the server's default field by field, and bad values are
// 400s naming the field.
#include <gtest/gtest.h>

#include "lemma/server/api_error.h"
#include "lemma/server/openai_request.h"

namespace lemma::server {
namespace {

ServerConfig config(StreamingWindow default_streaming = {}) {
  ServerConfig c;
  c.max_model_len = 512;
  c.default_streaming = default_streaming;
  return c;
}

ParsedCompletion parse(const std::string& fields, const ServerConfig& c = config()) {
  return parse_completion_request(R"({"prompt":"x")" + (fields.empty() ? "" : "," + fields) + "}",
                                  ApiKind::kCompletions, c);
}

void expect_400(const std::string& fields, const std::string& field, const std::string& words,
                const ServerConfig& c = config()) {
  try {
    parse(fields, c);
    ADD_FAILURE() << "accepted: " << fields;
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << fields;
    EXPECT_EQ(e.param().value_or(""), field) << fields << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(StreamingFields, ParsedAndDefaulted) {
  EXPECT_FALSE(parse("").streaming.enabled());
  EXPECT_EQ(parse(R"("attention_sinks":4,"streaming_window":60)").streaming, (StreamingWindow{4, 60}));
  EXPECT_EQ(parse(R"("streaming_window":60)").streaming, (StreamingWindow{0, 60}));
  const ServerConfig with_default = config({4, 448});
  EXPECT_EQ(parse("", with_default).streaming, (StreamingWindow{4, 448}));
  EXPECT_EQ(parse(R"("attention_sinks":8)", with_default).streaming, (StreamingWindow{8, 448}));
  EXPECT_EQ(parse(R"("streaming_window":100)", with_default).streaming, (StreamingWindow{4, 100}));
  // The chat endpoint takes them too.
  EXPECT_EQ(parse_completion_request(R"({"messages":[{"role":"user","content":"x"}],"streaming_window":9})",
                                     ApiKind::kChat, config())
                .streaming,
            (StreamingWindow{0, 9}));
}

TEST(StreamingFields, BadValuesAreRefusedByName) {
  expect_400(R"("streaming_window":0)", "streaming_window", "outside [1, 512]");
  expect_400(R"("streaming_window":-5)", "streaming_window", "outside [1, 512]");
  expect_400(R"("streaming_window":"60")", "streaming_window", "must be an integer");
  expect_400(R"("attention_sinks":-1,"streaming_window":60)", "attention_sinks", "outside [0, 511]");
  expect_400(R"("attention_sinks":4)", "attention_sinks", "needs \"streaming_window\"");
  expect_400(R"("attention_sinks":4,"streaming_window":509)", "streaming_window",
             "attention_sinks + streaming_window = 513 exceeds max_model_len 512");
  expect_400(R"("attention_sinks":100)", "attention_sinks", "exceeds max_model_len 512", config({4, 448}));
  expect_400(R"("streaming_window":60,"use_beam_search":true,"best_of":2)", "use_beam_search",
             "not supported with attention sinks");
}

}  // namespace
}  // namespace lemma::server
