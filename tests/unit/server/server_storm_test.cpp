// Many concurrent clients, some of which vanish at random moments: every request reaches exactly
// one terminal state, the engine is cancelled at most once per request, and the server keeps serving.
#include <random>
#include <thread>

#include "server_fixture.h"

namespace lemma::server::testing {
namespace {

using nlohmann::json;

int64_t metric_value(const std::string& text, const std::string& sample) {
  size_t at = text.find(sample + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + sample.size() + 1));
}

TEST_F(ServerTest, EngineFailureIs500OrAnErrorEvent) {
  engine_.fail_after_first_token = true;
  start();
  auto r = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 10}});
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.json()["error"]["message"], "boom");
  auto s = post_json(port_, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 10}, {"stream", true}});
  auto events = sse_payloads(s.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["error"]["code"], "error");
  EXPECT_EQ(engine_.total_cancels(), 0);  // the engine had already finished both
}

TEST_F(ServerTest, StormOfClientsWithRandomDisconnects) {
  engine_.token_delay = std::chrono::milliseconds(1);
  config_.io_threads = 3;
  start();
  constexpr int kClients = 48;
  std::vector<std::thread> clients;
  std::atomic<int> completed{0};
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(1234 + c);
      bool stream = c % 2 == 0;
      json body = {{"prompt", "x"}, {"max_tokens", 10 + int(rng() % 30)}, {"stream", stream}};
      if (c % 3 == 0) {  // vanish after a random delay
        RawConnection conn(port_);
        conn.send(raw_post(c % 6 == 0 ? "/v1/chat/completions" : "/v1/completions",
                           c % 6 == 0 ? json{{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                                             {"max_tokens", 500}, {"stream", stream}}.dump()
                                      : body.dump()));
        std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
        conn.close();
      } else {
        auto r = post_json(port_, "/v1/completions", body);
        EXPECT_EQ(r.status, 200) << r.body;
        if (stream) {
          EXPECT_EQ(sse_payloads(r.body).back(), "[DONE]");
        }
        ++completed;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(completed.load(), kClients - (kClients + 2) / 3);
  // Every request the engine saw reaches exactly one terminal state.
  ASSERT_TRUE(eventually([&] {
    auto m = http_request(port_, "GET", "/metrics").body;
    int64_t finished = 0;
    for (const char* reason : {"stop", "length", "cancelled", "timeout", "error", "overflow"}) {
      finished += metric_value(m, std::string("lemma_requests_finished_total{reason=\"") + reason + "\"}");
    }
    return finished == int64_t(engine_.requests().size());
  }, 5000));
  const auto requests = engine_.requests();
  EXPECT_GE(requests.size(), size_t(completed.load()));
  for (const auto& r : requests) EXPECT_LE(engine_.cancel_count(r.request_id), 1) << r.request_id;
  ASSERT_TRUE(eventually([&] { return engine_.stats().requests_running == 0; }, 5000));
  EXPECT_EQ(http_request(port_, "GET", "/health").status, 200);
}

}  // namespace
}  // namespace lemma::server::testing
