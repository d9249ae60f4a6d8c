// End-to-end tests of the HTTP layer over a fake engine: endpoints, streaming and non-streaming
// completions and chat, stop strings, logprobs, lifecycle (disconnect, timeout, slow reader, drain).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "lemma/server/output_buffer.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/jinja/default_chat_template.h"
#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

std::string stream_text(const std::vector<std::string>& payloads, const char* field_path = "text") {
  std::string text;
  for (const auto& p : payloads) {
    if (p == "[DONE]") continue;
    json j = json::parse(p);
    for (const auto& c : j["choices"]) {
      if (std::string(field_path) == "text") {
        text += c["text"].get<std::string>();
      } else if (c["delta"].contains("content")) {
        text += c["delta"]["content"].get<std::string>();
      }
    }
  }
  return text;
}

TEST_F(ServerTest, HealthModelsAndUnknownModel) {
  start();
  auto h = http_request(port_, "GET", "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json()["status"], "ok");
  auto m = http_request(port_, "GET", "/v1/models");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.json()["object"], "list");
  EXPECT_EQ(m.json()["data"][0]["id"], "test-model");
  EXPECT_EQ(http_request(port_, "GET", "/v1/models/test-model").status, 200);
  auto missing = http_request(port_, "GET", "/v1/models/other");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json()["error"]["code"], "model_not_found");
}

TEST_F(ServerTest, CompletionNonStreaming) {
  start();
  auto r = post_json(port_, "/v1/completions",
                     {{"model", "test-model"}, {"prompt", "Say hi"}, {"max_tokens", 5}, {"temperature", 0.0}, {"seed", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_GT(j["created"].get<int64_t>(), 0);
  EXPECT_EQ(j["choices"][0]["text"], decode_script(5));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  const auto prompt_len = int64_t(tokenizer_->encode("Say hi", true, false).size());
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt_len);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt_len + 5);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  auto reqs = engine_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].max_tokens, 5);
  EXPECT_TRUE(reqs[0].sampling.is_greedy());
  EXPECT_EQ(reqs[0].sampling.seed, 3u);
  EXPECT_EQ(reqs[0].request_id, j["id"]);
  EXPECT_EQ(r.header("x-request-id").empty(), false);
}

TEST_F(ServerTest, CompletionStreamingMatchesNonStreaming) {
  start();
  json body = {{"prompt", "Say hi"}, {"max_tokens", 12}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  auto r = post_json(port_, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "text/event-stream");
  auto events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  json usage_chunk = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], 12);
  json last = json::parse(events[events.size() - 3]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(last["object"], "text_completion");
  EXPECT_EQ(stream_text(events), decode_script(12));
}

TEST_F(ServerTest, ChatUsesTheChatMlDefaultTemplate) {
  start();
  json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                               {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Hi"}}})}}});
  auto r = post_json(port_, "/v1/chat/completions", {{"messages", messages}, {"max_completion_tokens", 4}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], decode_script(4));
  std::string expected = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(engine_.requests().at(0).prompt_ids, tokenizer_->encode(expected, false, true));
}

TEST_F(ServerTest, ChatStreamingStartsWithRoleAndEndsWithDone) {
  start();
  auto r = post_json(port_, "/v1/chat/completions",
                     {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 6}, {"stream", true}});
  ASSERT_EQ(r.status, 200);
  auto events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 3u);
  json first = json::parse(events.front());
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(stream_text(events, "delta"), decode_script(6));
}

TEST_F(ServerTest, StopStringAcrossTokenBoundariesEndsEarlyAndCancels) {
  // Slow enough that the fake engine cannot produce all 40 tokens before the server has seen the
  // stop string (it then has nothing left to cancel): at 2 ms under ThreadSanitizer it sometimes did.
  engine_.token_delay = std::chrono::milliseconds(20);
  start();
  // " quick" and " brown" are separate GPT-2 tokens: "ick bro" spans them.
  for (bool stream : {false, true}) {
    json body = {{"prompt", "x"}, {"max_tokens", 40}, {"stop", json::array({"ick bro", "never"})}, {"stream", stream}};
    auto r = post_json(port_, "/v1/completions", body);
    ASSERT_EQ(r.status, 200);
    std::string text;
    std::string id;
    if (stream) {
      auto events = sse_payloads(r.body);
      text = stream_text(events);
      EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "stop");
      for (const auto& e : events) EXPECT_EQ(e.find("ick"), std::string::npos) << "held-back text leaked: " << e;
      id = json::parse(events.front())["id"];
    } else {
      text = r.json()["choices"][0]["text"];
      EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
      id = r.json()["id"];
    }
    EXPECT_EQ(text, " Hello world! The qu") << (stream ? "stream" : "non-stream");
    EXPECT_TRUE(eventually([&] { return engine_.cancel_count(id) == 1; })) << "engine not cancelled";
  }
}

TEST_F(ServerTest, EndOfGenerationTokenIsNotText) {
  engine_.script.resize(3);
  engine_.end_token = *tokenizer_->eos_id();
  start();
  auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 10}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["choices"][0]["text"], decode_script(3));
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 4);
  EXPECT_EQ(engine_.total_cancels(), 0);
}

TEST_F(ServerTest, MultibyteTextStreamsAsWholeCharacters) {
  start();
  auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 64}, {"stream", true}});
  auto events = sse_payloads(r.body);
  for (const auto& e : events) EXPECT_EQ(e.find("\\ufffd"), std::string::npos) << e;  // no replacement chars
  EXPECT_EQ(stream_text(events), decode_script(engine_.script.size()));
}

TEST_F(ServerTest, ParallelChoicesAndLogprobs) {
  start();
  auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 4}, {"n", 2}, {"logprobs", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["text"], j["choices"][1]["text"]);
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"].size(), 4u);
  EXPECT_EQ(lp["token_logprobs"].size(), 4u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);

  auto c = post_json(port_, "/v1/chat/completions",
                     {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 3},
                      {"logprobs", true}, {"top_logprobs", 1}});
  ASSERT_EQ(c.status, 200) << c.body;
  json cj = c.json();
  const json& content = cj["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3u);
  EXPECT_TRUE(content[0].contains("bytes"));
  EXPECT_EQ(content[0]["top_logprobs"].size(), 1u);
}

TEST_F(ServerTest, TokenizeAndDetokenize) {
  start();
  auto t = post_json(port_, "/tokenize", {{"prompt", "Hello world"}});
  ASSERT_EQ(t.status, 200);
  EXPECT_EQ(t.json()["tokens"].get<std::vector<int32_t>>(), tokenizer_->encode("Hello world", true, false));
  EXPECT_EQ(t.json()["count"], t.json()["tokens"].size());
  auto d = post_json(port_, "/detokenize", {{"tokens", t.json()["tokens"]}});
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(d.json()["prompt"], "Hello world");
  EXPECT_EQ(post_json(port_, "/detokenize", {{"tokens", {-1}}}).status, 400);
}

TEST_F(ServerTest, TraceparentIsContinuedAndAccessLogged) {
  start();
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}, {"user", "alice"}},
                     {{"traceparent", "00-" + trace + "-00f067aa0ba902b7-01"}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("traceparent").substr(3, 32), trace);
  ASSERT_TRUE(eventually([&] { return !log_lines().empty(); }));
  json line = json::parse(log_lines().back());
  EXPECT_EQ(line["trace_id"], trace);
  EXPECT_EQ(line["request_id"], r.json()["id"]);
  EXPECT_EQ(line["status"], 200);
  EXPECT_EQ(line["path"], "/v1/completions");
  EXPECT_EQ(line["user"], "alice");
  EXPECT_EQ(line["terminal"], "finished");
  EXPECT_EQ(line["completion_tokens"], 2);
  EXPECT_GE(line["ttft_ms"].get<double>(), 0.0);
  EXPECT_GE(line["queue_ms"].get<double>(), 0.0);
}

TEST_F(ServerTest, ClientDisconnectMidStreamCancelsExactlyOnce) {
  engine_.token_delay = std::chrono::milliseconds(5);
  engine_.script.resize(3);
  for (int i = 0; i < 10; ++i) engine_.script.insert(engine_.script.end(), engine_.script.begin(), engine_.script.begin() + 3);
  start();
  RawConnection conn(port_);
  conn.send(raw_post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 100000}, {"stream", true}}.dump()));
  std::string got = conn.read_until("data: {", 3000);
  ASSERT_NE(got.find("data: {"), std::string::npos) << got;
  conn.close();
  ASSERT_TRUE(eventually([&] { return engine_.total_cancels() == 1; })) << engine_.total_cancels();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(engine_.total_cancels(), 1);
  ASSERT_TRUE(eventually([&] { return !log_lines().empty(); }));
  EXPECT_EQ(json::parse(log_lines().back())["terminal"], "cancelled");
  EXPECT_EQ(http_request(port_, "GET", "/health").status, 200);  // others still served
}

TEST_F(ServerTest, ClientDisconnectWhileWaitingNonStreamingCancels) {
  engine_.token_delay = std::chrono::milliseconds(5);
  start();
  RawConnection conn(port_);
  conn.send(raw_post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 100000}, {"ignore_eos", true}}.dump()));
  ASSERT_TRUE(eventually([&] { return engine_.requests().size() == 1; }));
  conn.close();
  ASSERT_TRUE(eventually([&] { return engine_.total_cancels() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(engine_.total_cancels(), 1);
}

TEST_F(ServerTest, SlowReaderIsCutAtTheBufferBound) {
  config_.stream_buffer_tokens = 64;
  engine_.script.clear();
  for (int i = 0; i < 200000; ++i) engine_.script.push_back(int32_t(1000 + i % 500));
  start();
  RawConnection conn(port_);
  conn.send(raw_post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 200000}, {"stream", true}}.dump()));
  // Never read: the socket fills, the buffer overflows, the request is cancelled. (Filling the
  // loopback socket's megabytes took over 10 s once under ThreadSanitizer on a 2-core machine.)
  ASSERT_TRUE(eventually([&] { return engine_.total_cancels() == 1; }, 30000)) << "slow reader never cut";
  auto id = engine_.requests().at(0).request_id;
  auto buffer = std::dynamic_pointer_cast<OutputBuffer>(engine_.sink_of(id));
  ASSERT_TRUE(buffer);
  EXPECT_LE(buffer->max_pending_tokens(), 64u);
  EXPECT_TRUE(buffer->overflowed());
  EXPECT_EQ(http_request(port_, "GET", "/health").status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(engine_.total_cancels(), 1);
}

TEST_F(ServerTest, RequestTimeoutEndsTheRequest) {
  config_.request_timeout = std::chrono::milliseconds(300);
  engine_.token_delay = std::chrono::milliseconds(20);
  start();
  auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 100000}, {"ignore_eos", true}});
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(r.json()["error"]["code"], "timeout");
  auto s = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 100000}, {"stream", true}});
  EXPECT_EQ(s.status, 200);
  auto events = sse_payloads(s.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["error"]["code"], "timeout");
  EXPECT_TRUE(eventually([&] { return engine_.total_cancels() == 2; }));
}

TEST_F(ServerTest, StopDrainsInFlightRequestsThenRefuses) {
  engine_.token_delay = std::chrono::milliseconds(10);
  start();
  std::thread client([&] {
    auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 10}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length");
  });
  ASSERT_TRUE(eventually([&] { return engine_.requests().size() == 1; }));
  server_->stop(std::chrono::milliseconds(5000));
  client.join();
  EXPECT_EQ(engine_.total_cancels(), 0);
}

// A stop that begins while a request is being handed to the engine waits for it like any other.
TEST_F(ServerTest, StopWaitsForARequestBeingSubmitted) {
  std::atomic<bool> submitting{false};
  engine_.before_submit = [&] {
    submitting = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // stop() starts meanwhile
  };
  start();
  std::thread client([&] {
    auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 5}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length");
  });
  ASSERT_TRUE(eventually([&] { return submitting.load(); }));
  server_->stop(std::chrono::milliseconds(5000));
  client.join();
  EXPECT_EQ(engine_.total_cancels(), 0);
  EXPECT_EQ(engine_.requests().size(), 1u);
}

TEST_F(ServerTest, StopAfterGraceCancelsWhatIsLeft) {
  engine_.token_delay = std::chrono::milliseconds(10);
  start();
  std::thread client([&] {
    auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 100000}, {"ignore_eos", true}});
    EXPECT_EQ(r.status, 503);
  });
  ASSERT_TRUE(eventually([&] { return engine_.requests().size() == 1; }));
  server_->stop(std::chrono::milliseconds(50));
  client.join();
  EXPECT_EQ(engine_.total_cancels(), 1);
}

TEST_F(ServerTest, MetricsExposeRequiredFamilies) {
  start();
  ASSERT_EQ(post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 3}}).status, 200);
  http_request(port_, "GET", "/nope");
  auto m = http_request(port_, "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.header("content-type").rfind("text/plain", 0), 0u);
  for (const char* name :
       {"lemma_requests_running", "lemma_requests_waiting", "lemma_requests_finished_total{reason=\"length\"} 1",
        "lemma_kv_blocks_used", "lemma_kv_blocks_total 64", "lemma_prefix_cache_queries_total",
        "lemma_prefix_cache_hits_total", "lemma_preemptions_total", "lemma_prompt_tokens_total",
        "lemma_generation_tokens_total 3", "lemma_queue_time_seconds_bucket", "lemma_time_to_first_token_seconds_count 1",
        "lemma_time_per_output_token_seconds_count 1", "lemma_inter_token_latency_seconds", "lemma_batch_size_count 3",
        "lemma_e2e_request_latency_seconds_count 1", "lemma_http_requests_total{endpoint=\"completions\",status=\"2xx\"} 1",
        "lemma_http_requests_total{endpoint=\"other\",status=\"4xx\"} 1"}) {
    EXPECT_NE(m.body.find(name), std::string::npos) << name;
  }
  // Every sample line: name{labels} value.
  std::istringstream lines(m.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(lemma_[a-z0-9_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [-+0-9.eInf]+)")))
        << line;
  }
  const bool has_promtool = std::system("command -v promtool >/dev/null 2>&1") == 0;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") {
    EXPECT_TRUE(has_promtool) << "promtool is missing (scripts/setup installs Debian's prometheus)";
  }
  if (has_promtool) {
    auto path = lemma::testing::build_scratch("server") / "metrics.txt";
    { std::ofstream(path) << m.body; }
    std::string cmd = "promtool check metrics < " + path.string() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    int rc = p ? pclose(p) : -1;
    EXPECT_EQ(rc, 0) << out;
  }
}

}  // namespace
}  // namespace lemma::server::testing
