// SSE framing and stream validation: good completion and chat streams give timings and counts;
// malformed ones (not JSON, no [DONE], no finish_reason, error events, missing usage) are failures
// with a reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lemma/bench/serving/sse_parser.h"
#include "lemma/bench/serving/stream_validator.h"

namespace lemma::bench::serving {
namespace {

std::vector<std::string> payloads_of(const std::string& bytes, size_t piece) {
  std::vector<std::string> out;
  SseParser parser([&](const std::string& p) { out.push_back(p); });
  for (size_t i = 0; i < bytes.size(); i += piece) parser.feed(std::string_view(bytes).substr(i, piece));
  EXPECT_FALSE(parser.has_partial_event());
  return out;
}

TEST(ServingSse, SplitsEventsWhateverTheReadSizes) {
  const std::string bytes = "data: {\"a\":1}\n\n: a comment\n\nevent: x\ndata: {\"b\":2}\r\n\r\ndata:[DONE]\n\n";
  for (size_t piece : {1, 2, 5, 1000}) {
    EXPECT_EQ(payloads_of(bytes, piece), (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"})) << piece;
  }
}

TEST(ServingSse, JoinsMultiLineDataAndNoticesATruncatedEvent) {
  std::vector<std::string> got;
  SseParser parser([&](const std::string& p) { got.push_back(p); });
  parser.feed("data: one\ndata: two\n\ndata: {\"cut");
  EXPECT_EQ(got, std::vector<std::string>{"one\ntwo"});
  EXPECT_TRUE(parser.has_partial_event());
}

std::string completion_chunk(const std::string& text, const char* finish = nullptr) {
  std::string fr = finish ? std::string("\"") + finish + "\"" : "null";
  return "{\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":" + fr + "}]}";
}
const std::string kUsage = "{\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}";

RequestOutcome validate(Endpoint endpoint, bool usage, const std::vector<std::string>& payloads, const std::string& transport = "") {
  StreamValidator v(endpoint, usage);
  double t = 0.1;
  for (const auto& p : payloads) {
    v.on_payload(p, t);
    t += 0.05;
  }
  RequestOutcome out;
  out.prompt_tokens = 99;  // the workload's estimate, replaced by usage
  v.finish(t, transport, out);
  return out;
}

TEST(ServingStream, GoodCompletionStream) {
  const auto o = validate(Endpoint::kCompletions, true,
                          {completion_chunk("a"), completion_chunk("b"), completion_chunk("c", "length"), kUsage, "[DONE]"});
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_DOUBLE_EQ(o.ttft_s, 0.1);
  ASSERT_EQ(o.itl_s.size(), 2u);
  EXPECT_NEAR(o.itl_s[0], 0.05, 1e-12);
  EXPECT_EQ(o.output_tokens, 3);
  EXPECT_EQ(o.prompt_tokens, 7);
  EXPECT_TRUE(o.usage_reported);
  EXPECT_GE(o.e2e_s, o.ttft_s);
  EXPECT_GT(o.tpot_s(), 0.0);
}

TEST(ServingStream, ChatStreamSkipsTheRoleChunkForTtft) {
  const std::vector<std::string> p = {
      R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})",
      R"({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]})",
      R"({"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]})",
      R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})", "[DONE]"};
  const auto o = validate(Endpoint::kChat, false, p);
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_DOUBLE_EQ(o.ttft_s, 0.15);  // the second payload
  EXPECT_EQ(o.output_tokens, 2);     // no usage: content chunks
  EXPECT_FALSE(o.usage_reported);
  EXPECT_EQ(o.prompt_tokens, 99);
}

TEST(ServingStream, MalformedStreamsFailWithAReason) {
  struct Case {
    std::vector<std::string> payloads;
    bool usage;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {{completion_chunk("a"), "{not json", "[DONE]"}, false, "not a JSON object"},
      {{completion_chunk("a", "stop")}, false, "without data: [DONE]"},
      {{completion_chunk("a"), "[DONE]"}, false, "no finish_reason"},
      {{completion_chunk("", "stop"), "[DONE]"}, false, "no content"},
      {{completion_chunk("a", "stop"), "[DONE]"}, true, "no usage"},
      {{completion_chunk("a", "stop"), "[DONE]", completion_chunk("b")}, false, "after [DONE]"},
      {{completion_chunk("a"), R"({"error":{"message":"boom","type":"server_error"}})", "[DONE]"}, false, "boom"},
      {{R"({"choices":[{"index":0}]})", "[DONE]"}, false, "without a string \"text\""},
      {{R"({"id":"x"})", "[DONE]"}, false, "without a \"choices\" array"},
      {{completion_chunk("a", "stop"), R"({"choices":[],"usage":{"prompt_tokens":"7"}})", "[DONE]"}, true, "usage object"},
  };
  for (const auto& c : cases) {
    const auto o = validate(Endpoint::kCompletions, c.usage, c.payloads);
    EXPECT_FALSE(o.ok) << c.reason;
    EXPECT_NE(o.error.find(c.reason), std::string::npos) << "got: " << o.error << ", wanted: " << c.reason;
  }
  const auto chat = validate(Endpoint::kChat, false, {completion_chunk("a", "stop"), "[DONE]"});
  EXPECT_FALSE(chat.ok);
  EXPECT_NE(chat.error.find("delta"), std::string::npos) << chat.error;
}

TEST(ServingStream, TransportErrorsFailEvenAfterGoodChunks) {
  const auto o = validate(Endpoint::kCompletions, false, {completion_chunk("a")}, "read: connection reset");
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error, "read: connection reset");
}

}  // namespace
}  // namespace lemma::bench::serving
