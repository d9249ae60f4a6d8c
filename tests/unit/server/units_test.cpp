// Unit tests of the server's socket-free pieces: stop strings, the bounded output buffer, request
// parsing/validation, routing, trace context and metrics text.
#include <gtest/gtest.h>

#include "lemma/server/api_error.h"
#include "lemma/server/metrics.h"
#include "lemma/server/openai_request.h"
#include "lemma/server/output_buffer.h"
#include "lemma/server/request_context.h"
#include "lemma/server/router.h"
#include "lemma/server/stop_matcher.h"

namespace lemma::server {
namespace {

CompletionDelta delta(int index, std::vector<int32_t> tokens, std::optional<RequestStatus> finish) {
  CompletionDelta d;
  d.index = index;
  d.token_ids = std::move(tokens);
  d.finish_reason = finish;
  return d;
}

std::string feed_all(StopMatcher& m, const std::vector<std::string>& pieces, bool* stopped) {
  std::string out;
  for (const auto& p : pieces) {
    auto r = m.feed(p);
    out += r.text;
    if (r.stopped) {
      *stopped = true;
      return out;
    }
  }
  out += m.flush();
  return out;
}

TEST(StopMatcher, MatchesAcrossPieceBoundaries) {
  StopMatcher m({"STOP"});
  bool stopped = false;
  EXPECT_EQ(feed_all(m, {"abc S", "T", "O", "P tail"}, &stopped), "abc ");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, HoldsBackOnlyPossiblePrefixes) {
  StopMatcher m({"xyz"});
  auto r = m.feed("hello x");
  EXPECT_EQ(r.text, "hello ");  // "x" may start "xyz"
  r = m.feed("a");
  EXPECT_EQ(r.text, "xa");      // it did not
  EXPECT_FALSE(r.stopped);
  r = m.feed("xy");
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(m.flush(), "xy");   // released when the choice ends without a match
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  bool stopped = false;
  EXPECT_EQ(feed_all(m, {"hello world"}, &stopped), "hel");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, MultiByteTextStaysWhole) {
  StopMatcher m({"\xC3\xA9t\xC3\xA9"});  // "été"
  bool stopped = false;
  EXPECT_EQ(feed_all(m, {"un \xC3\xA9", "t", "\xC3\xA9 chaud"}, &stopped), "un ");
  EXPECT_TRUE(stopped);
}

TEST(OutputBuffer, CoalescesAndNotifiesOncePerTake) {
  OutputBuffer b(100);
  int notified = 0;
  b.set_notify([&] { ++notified; });
  b.push(delta(0, {1}, std::nullopt));
  b.push(delta(0, {2}, std::nullopt));
  b.push(delta(1, {7}, std::nullopt));
  EXPECT_EQ(notified, 1);
  EXPECT_EQ(b.pending_tokens(), 3u);
  auto got = b.take();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(got[1].token_ids, (std::vector<int32_t>{7}));
  b.push(delta(0, {3}, RequestStatus::kFinishedLength));
  EXPECT_EQ(notified, 2);
  EXPECT_FALSE(b.overflowed());
}

TEST(OutputBuffer, OverflowDropsTokensButKeepsFinishReasons) {
  OutputBuffer b(4);
  for (int i = 0; i < 10; ++i) b.push(delta(0, {i}, std::nullopt));
  EXPECT_TRUE(b.overflowed());
  EXPECT_LE(b.max_pending_tokens(), 4u);
  b.push(delta(0, {99}, RequestStatus::kFinishedCancelled));
  auto got = b.take();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back().finish_reason, RequestStatus::kFinishedCancelled);
  size_t tokens = 0;
  for (const auto& d : got) tokens += d.token_ids.size();
  EXPECT_LE(tokens, 4u);
}

TEST(OutputBuffer, ClosedBufferDropsEverything) {
  OutputBuffer b(4);
  b.close();
  b.push(delta(0, {1}, RequestStatus::kFinishedStopped));
  EXPECT_TRUE(b.take().empty());
}

ServerConfig config() { return ServerConfig{}; }

void expect_field_error(const std::string& body, const std::string& field, ApiKind kind = ApiKind::kCompletions) {
  try {
    parse_completion_request(body, kind, config());
    ADD_FAILURE() << "accepted: " << body;
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.param().value_or(""), field) << body << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(OpenAiRequest, ParsesCompletionFields) {
  auto r = parse_completion_request(
      R"({"model":"m","prompt":"hi","temperature":0.5,"top_p":0.9,"top_k":5,"min_p":0.1,"n":2,"stop":"x",
          "seed":7,"max_tokens":9,"logprobs":3,"presence_penalty":1,"frequency_penalty":-1,"repetition_penalty":1.1,
          "logit_bias":{"42":-100},"stream":true,"stream_options":{"include_usage":true},"user":"u","ignore_eos":true})",
      ApiKind::kCompletions, config());
  EXPECT_EQ(*r.prompt_text, "hi");
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 5);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(*r.sampling.seed, 7u);
  EXPECT_EQ(*r.max_tokens, 9);
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 3);
  ASSERT_EQ(r.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(r.sampling.logit_bias[0].first, 42);
  EXPECT_TRUE(r.stream && r.include_usage && r.ignore_eos);
  EXPECT_EQ(r.user, "u");
}

TEST(OpenAiRequest, PromptForms) {
  EXPECT_EQ(parse_completion_request(R"({"prompt":[1,2,3]})", ApiKind::kCompletions, config()).prompt_ids,
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(*parse_completion_request(R"({"prompt":["a"]})", ApiKind::kCompletions, config()).prompt_text, "a");
  EXPECT_EQ(parse_completion_request(R"({"prompt":[[4,5]]})", ApiKind::kCompletions, config()).prompt_ids,
            (std::vector<int32_t>{4, 5}));
  auto chat = parse_completion_request(
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
          "max_completion_tokens":3,"logprobs":true,"top_logprobs":2})", ApiKind::kChat, config());
  EXPECT_EQ(chat.messages[0]["content"], "ab");
  EXPECT_EQ(*chat.max_tokens, 3);
  EXPECT_EQ(chat.sampling.top_logprobs, 2);
}

TEST(OpenAiRequest, NamesTheBadField) {
  expect_field_error(R"({"prompt":"x","temperature":-1})", "temperature");
  expect_field_error(R"({"prompt":"x","temperature":"hot"})", "temperature");
  expect_field_error(R"({"prompt":"x","top_p":0})", "top_p");
  expect_field_error(R"({"prompt":"x","n":0})", "n");
  expect_field_error(R"({"prompt":"x","n":100})", "n");
  expect_field_error(R"({"prompt":"x","max_tokens":0})", "max_tokens");
  expect_field_error(R"({"prompt":"x","max_tokens":1.5})", "max_tokens");
  expect_field_error(R"({"prompt":"x","stop":5})", "stop");
  expect_field_error(R"({"prompt":"x","logit_bias":{"abc":1}})", "logit_bias");
  expect_field_error(R"({"prompt":"x","logit_bias":{"5":1000}})", "logit_bias");
  expect_field_error(R"({"prompt":"x","presence_penalty":3})", "presence_penalty");
  expect_field_error(R"({"prompt":"x","logprobs":50})", "logprobs");
  expect_field_error(R"({"prompt":"x","stream_options":{"include_usage":true}})", "stream_options");
  expect_field_error(R"({"prompt":["a","b"]})", "prompt");
  expect_field_error(R"({"prompt":[-1]})", "prompt");
  expect_field_error(R"({})", "prompt");
  expect_field_error(R"({"messages":[]})", "messages", ApiKind::kChat);
  expect_field_error(R"({"messages":[{"content":"x"}]})", "messages[0].role", ApiKind::kChat);
  expect_field_error(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", "top_logprobs", ApiKind::kChat);
}

TEST(OpenAiRequest, MalformedJsonIs400WithoutParam) {
  for (const char* body : {"{", "[1,2]", "nul", "{\"prompt\": \"\xff\"}"}) {
    try {
      parse_completion_request(body, ApiKind::kCompletions, config());
      ADD_FAILURE() << body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.code().value_or(""), "invalid_json");
    }
  }
}

TEST(ApiError, BodyHasTheOpenAiShape) {
  auto j = nlohmann::json::parse(ApiError(404, "gone", "model", "model_not_found").body());
  EXPECT_EQ(j["error"]["message"], "gone");
  EXPECT_EQ(j["error"]["type"], "not_found_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
}

TEST(Router, KnownUnknownAndWrongMethod) {
  EXPECT_EQ(match_route("POST", "/v1/completions").route, Route::kCompletions);
  EXPECT_EQ(match_route("POST", "/v1/chat/completions/").route, Route::kChat);
  EXPECT_EQ(match_route("GET", "/v1/models/abc").model, "abc");
  auto m = match_route("GET", "/v1/completions");
  EXPECT_EQ(m.route, Route::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "POST");
  EXPECT_EQ(match_route("GET", "/nope").route, Route::kNotFound);
  EXPECT_EQ(match_route("GET", "/nope").label, "other");
  EXPECT_FALSE(route_needs_auth(Route::kHealth));
  EXPECT_TRUE(route_needs_auth(Route::kCompletions));
}

TEST(TraceContext, ContinuesValidTraceparentOnly) {
  auto t = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(t->parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(t->span_id.size(), 16u);
  EXPECT_FALSE(parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
  EXPECT_FALSE(parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
  EXPECT_FALSE(parse_traceparent("garbage"));
  auto fresh = make_trace("garbage");
  EXPECT_EQ(fresh.trace_id.size(), 32u);
  EXPECT_NE(fresh.trace_id, make_trace("").trace_id);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Histogram h({1, 2});
  h.observe(0.5);
  h.observe(1.5);
  h.observe(9);
  std::string out;
  h.render(out, "x");
  EXPECT_NE(out.find("x_bucket{le=\"1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"2\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_count 3\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace lemma::server
