// HTTP that a hostile or sloppy client sends, at the socket level: duplicate Authorization, the
// Bearer scheme's case, WWW-Authenticate on 401, 431 for huge headers, 400 for a malformed request
// line, Expect: 100-continue, HEAD's Content-Length, HTTP/1.0 streams, slowloris header timeouts,
// the connection cap (refusal and idle eviction), /health while draining, and logprobs cut with
// the text at a stop string.
#include <gtest/gtest.h>

#include <thread>

#include "lemma/server/server_context.h"
#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

int status_of(const std::string& raw) {
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12) return 0;
  return std::stoi(raw.substr(9, 3));
}

std::string body_of(const std::string& raw) {
  size_t at = raw.find("\r\n\r\n");
  return at == std::string::npos ? "" : raw.substr(at + 4);
}

std::string metric_line(uint16_t port, const std::string& prefix) {
  std::string text = http_request(port, "GET", "/metrics").body;
  size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

TEST_F(ServerTest, DuplicateAuthorizationIs400) {
  config_.api_key = "k";
  start();
  RawConnection conn(port_);
  conn.send("GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nAuthorization: Bearer other\r\n\r\n");
  std::string got = conn.read_until("}}", 3000);
  EXPECT_EQ(status_of(got), 400) << got;
  EXPECT_NE(got.find("duplicate_header"), std::string::npos) << got;
}

TEST_F(ServerTest, BearerSchemeIsCaseInsensitiveAnd401SaysHowToAuthenticate) {
  config_.api_key = "secret";
  start();
  EXPECT_EQ(http_request(port_, "GET", "/v1/models", "", {{"Authorization", "bearer secret"}}).status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/v1/models", "", {{"Authorization", "BEARER  secret"}}).status, 200);
  auto denied = http_request(port_, "GET", "/v1/models", "", {{"Authorization", "Basic secret"}});
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.header("www-authenticate"), "Bearer");
  EXPECT_EQ(http_request(port_, "GET", "/v1/models", "", {{"Authorization", "Bearer secretX"}}).status, 401);
  EXPECT_EQ(http_request(port_, "GET", "/v1/models", "", {{"Authorization", "Bearer"}}).status, 401);
}

TEST_F(ServerTest, OversizedHeaderIs431AndMalformedRequestLineIs400) {
  start();
  {
    RawConnection conn(port_);
    conn.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(80 * 1024, 'a') + "\r\n\r\n");
    std::string got = conn.read_until("}}", 3000);
    EXPECT_EQ(status_of(got), 431) << got.substr(0, 200);
  }
  for (const char* line : {"GARBAGE\r\n\r\n", "GET /health HTTP/9.9\r\n\r\n", "GET  HTTP/1.1\r\n\r\n",
                           "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"}) {
    RawConnection conn(port_);
    conn.send(line);
    std::string got = conn.read_until("}}", 3000);
    EXPECT_EQ(status_of(got), 400) << line << " -> " << got;
    EXPECT_NE(got.find("bad_request"), std::string::npos) << got;
  }
  EXPECT_EQ(http_request(port_, "GET", "/health").status, 200);  // still serving
}

TEST_F(ServerTest, ExpectContinueIsAnswered) {
  start();
  RawConnection conn(port_);
  const std::string body = json{{"prompt", "x"}, {"max_tokens", 2}}.dump();
  conn.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  std::string got = conn.read_until("\r\n\r\n", 3000);
  ASSERT_EQ(got.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << got;
  conn.send(body);
  got = conn.read_until("\"total_tokens\"", 3000);
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;

  RawConnection odd(port_);
  odd.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 2\r\n\r\n{}");
  got = odd.read_until("}}", 3000);
  EXPECT_EQ(status_of(got), 417) << got;
}

TEST_F(ServerTest, HeadHasTheGetsContentLength) {
  start();
  auto get = http_request(port_, "GET", "/v1/models");
  ASSERT_EQ(get.status, 200);
  RawConnection conn(port_);
  conn.send("HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = conn.read_until("\r\n\r\n", 3000);
  EXPECT_EQ(status_of(got), 200) << got;
  EXPECT_NE(got.find("Content-Length: " + std::to_string(get.body.size()) + "\r\n"), std::string::npos) << got;
  // No body follows: the next request on the connection is answered next.
  conn.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  got = conn.read_until("\"ok\"}", 3000);
  EXPECT_EQ(body_of(got).rfind("HTTP/1.1 200", 0), 0u) << got;
}

TEST_F(ServerTest, Http10StreamIsCloseDelimited) {
  start();
  RawConnection conn(port_);
  const std::string body = json{{"prompt", "x"}, {"max_tokens", 3}, {"stream", true}}.dump();
  conn.send("POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body);
  std::string got = conn.read_until("NEVER", 3000);
  EXPECT_TRUE(conn.peer_closed());
  EXPECT_EQ(got.rfind("HTTP/1.0 200", 0), 0u) << got;
  EXPECT_EQ(got.find("Transfer-Encoding"), std::string::npos) << got;
  auto events = sse_payloads(body_of(got));
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) text += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, decode_script(3));
}

TEST_F(ServerTest, SlowlorisIsClosedAfterTheHeaderTimeout) {
  config_.header_timeout = std::chrono::milliseconds(300);
  start();
  RawConnection silent(port_);  // sends nothing at all
  RawConnection slow(port_);
  slow.send("GET /health HTTP/1.1\r\nHost: x\r\n");
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    slow.send("X-Drip: " + std::to_string(i) + "\r\n");
  }
  slow.read_until("NEVER", 2000);
  silent.read_until("NEVER", 500);
  EXPECT_TRUE(slow.peer_closed());
  EXPECT_TRUE(silent.peer_closed());
  // The timer closes the socket before the reading coroutine resumes and counts it: poll.
  const std::string timed_out = "lemma_http_connections_closed_early_total{reason=\"header_timeout\"}";
  EXPECT_TRUE(eventually([&] { return metric_line(port_, timed_out) == timed_out + " 2"; }))
      << metric_line(port_, timed_out);
  // A keep-alive connection may sit idle longer than the header timeout between requests.
  RawConnection keep(port_);
  keep.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  keep.read_until("\"ok\"}", 2000);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  keep.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = keep.read_until("\"ok\"}\r\n", 100);
  got = keep.read_until("NEVER", 300);
  EXPECT_EQ(std::count(got.begin(), got.end(), '{'), 2) << got;
}

TEST_F(ServerTest, ConnectionCapRefusesOrEvictsIdle) {
  config_.max_connections = 3;
  start();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 3; ++i) {  // mid-header: busy, not evictable
    held.push_back(std::make_unique<RawConnection>(port_));
    held.back()->send("GET /health HTTP/1.1\r\n");
  }
  ASSERT_TRUE(eventually([&] { return server_->context().connections.size() == 3; }));
  RawConnection refused(port_);
  std::string got = refused.read_until("}}", 3000);
  EXPECT_EQ(status_of(got), 503) << got;
  EXPECT_NE(got.find("too_many_connections"), std::string::npos) << got;
  EXPECT_TRUE(eventually([&] { return refused.read_until("NEVER", 50), refused.peer_closed(); }));
  // Make one of them an idle keep-alive connection: a newcomer takes its place.
  held[0]->send("\r\n");
  held[0]->read_until("\"ok\"}", 2000);
  ASSERT_TRUE(eventually([&] { return server_->context().connections.num_idle() == 1; }));
  auto r = http_request(port_, "GET", "/health");
  EXPECT_EQ(r.status, 200);
  held[0]->read_until("NEVER", 300);
  EXPECT_TRUE(held[0]->peer_closed());
  held.clear();
  EXPECT_TRUE(eventually([&] { return server_->context().connections.size() <= 1; }));
  std::string refused_line = metric_line(port_, "lemma_http_connections_refused_total{reason=\"max_connections\"}");
  EXPECT_EQ(refused_line, "lemma_http_connections_refused_total{reason=\"max_connections\"} 1");
  EXPECT_EQ(metric_line(port_, "lemma_http_connections_closed_early_total{reason=\"idle_evicted\"}"),
            "lemma_http_connections_closed_early_total{reason=\"idle_evicted\"} 1");
}

TEST_F(ServerTest, HealthSays503DrainingWhileRequestsFinish) {
  engine_.token_delay = std::chrono::milliseconds(40);
  start();
  std::thread client([&] {
    auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 12}});
    EXPECT_EQ(r.status, 200);
  });
  ASSERT_TRUE(eventually([&] { return engine_.requests().size() == 1; }));
  std::thread stopper([&] { server_->stop(std::chrono::seconds(5)); });
  ASSERT_TRUE(eventually([&] { return server_->context().draining.load(); }));
  auto health = http_request(port_, "GET", "/health");  // a new connection: the listener is still open
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.json()["status"], "draining");
  auto refused = post_json(port_, "/v1/completions", {{"prompt", "x"}});
  EXPECT_EQ(refused.status, 503);
  client.join();
  stopper.join();
}

TEST_F(ServerTest, LogprobsEndWithTheTextAtAStopString) {
  start();
  // The script's text is " Hello world! The quick brown fox ...": "brown fox" is cut before "brown";
  // the " brown" token's text begins before the cut (its space is emitted), " fox" begins after it.
  for (bool stream : {false, true}) {
    json body = {{"prompt", "x"}, {"max_tokens", 12}, {"logprobs", 1}, {"stop", "brown fox"}, {"stream", stream}};
    auto r = post_json(port_, "/v1/completions", body);
    ASSERT_EQ(r.status, 200);
    std::vector<std::string> tokens;
    std::string text;
    auto take = [&](const json& choice) {
      text += choice["text"].get<std::string>();
      if (choice["logprobs"].is_null()) return;
      for (const auto& t : choice["logprobs"]["tokens"]) tokens.push_back(t.get<std::string>());
    };
    if (stream) {
      for (const auto& e : sse_payloads(r.body)) if (e != "[DONE]") take(json::parse(e)["choices"][0]);
    } else {
      take(r.json()["choices"][0]);
    }
    EXPECT_EQ(text, " Hello world! The quick ") << stream;
    // " Hello", " world", "!", " The", " quick", " brown"
    EXPECT_EQ(tokens.size(), 6u) << stream << " " << json(tokens).dump();
  }
}

// A reader that stops reading while the engine is slower than the buffer bound: the stalled write
// is noticed, the connection dropped at once (nothing left queued), the engine request cancelled.
TEST_F(ServerTest, StalledReaderIsDroppedAndCountedAsOverflow) {
  config_.stream_buffer_tokens = 1 << 22;  // the bound never trips: only the stall can end it
  config_.stalled_write_timeout = std::chrono::milliseconds(300);
  engine_.script.clear();
  for (int i = 0; i < 400000; ++i) engine_.script.push_back(int32_t(1000 + i % 500));
  engine_.token_delay = std::chrono::microseconds(10);  // still generating when the stall is noticed
  start();
  RawConnection conn(port_, 4096);
  conn.send(raw_post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 400000}, {"stream", true}}.dump()));
  ASSERT_TRUE(eventually([&] { return engine_.total_cancels() == 1; }, 10000)) << "stalled reader never cut";
  EXPECT_TRUE(eventually([&] {
    return metric_line(port_, "lemma_requests_finished_total{reason=\"overflow\"}") ==
           "lemma_requests_finished_total{reason=\"overflow\"} 1";
  }));
  EXPECT_TRUE(eventually([&] { return server_->context().connections.size() <= 1; }));
  conn.read_until("NEVER", 5000);  // what was queued before the reset, then the reset
  EXPECT_TRUE(conn.peer_closed());
}

}  // namespace
}  // namespace lemma::server::testing
