// `lemma bench serve`'s runner end to end: against the real lemma HTTP server over the FakeEngine
// (completions, chat, model discovery, API keys, Poisson arrivals with a concurrency limit), and
// against canned servers that answer 500, garbage or broken streams, which must be counted as
// failures with their reasons. No timing is asserted beyond sanity.
#include <atomic>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "lemma/base/error.h"
#include "lemma/bench/serving/load_runner.h"
#include "server_fixture.h"

namespace lemma::bench::serving {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;

ServingBenchOptions options_for(uint16_t port, int64_t n) {
  ServingBenchOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port);
  o.model = "test-model";
  o.workload.num_prompts = n;
  o.workload.input_len = 8;
  o.workload.output_len = 5;
  o.workload.seed = 1;
  o.request_timeout_s = 30;
  return o;
}

void expect_sane(const ServingRun& run) {
  for (const auto& o : run.outcomes) {
    if (!o.ok) continue;
    EXPECT_GE(o.ttft_s, 0.0);
    EXPECT_GE(o.e2e_s, o.ttft_s);
    for (double gap : o.itl_s) EXPECT_GE(gap, 0.0);
  }
  for (const Summary* s : {&run.report.ttft_ms, &run.report.tpot_ms, &run.report.itl_ms, &run.report.e2e_ms}) {
    EXPECT_LE(s->p50, s->p90);
    EXPECT_LE(s->p90, s->p99);
  }
}

using ServeBench = server::testing::ServerTest;

TEST_F(ServeBench, CompletionsAllCountedWithUsageTokens) {
  start();
  auto o = options_for(port_, 12);
  o.concurrency = 4;
  o.ignore_eos = true;
  std::atomic<int> progress_calls{0};
  const ServingRun run = run_serving_benchmark(o, [&](const Progress& p) {
    EXPECT_EQ(p.total, 12);
    EXPECT_LE(p.in_flight, 4);
    ++progress_calls;
  });
  const ServingReport& r = run.report;
  EXPECT_EQ(r.completed, 12) << format_serving_table(r, run.label);
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.output_tokens, 12 * 5);
  EXPECT_EQ(r.usage_reported, 12);
  EXPECT_GT(r.input_tokens, 0);
  EXPECT_GT(r.request_throughput, 0.0);
  EXPECT_EQ(r.ttft_ms.count, 12);
  EXPECT_EQ(r.tpot_ms.count, 12);
  EXPECT_GE(progress_calls.load(), 1);  // at least the final report
  const auto requests = engine_.requests();
  ASSERT_EQ(requests.size(), 12u);
  for (const auto& q : requests) {
    EXPECT_EQ(q.max_tokens, 5);
    EXPECT_TRUE(q.ignore_eos);
  }
  expect_sane(run);
}

TEST_F(ServeBench, ChatPoissonWithConcurrencyLimitAndDiscoveredModel) {
  engine_.token_delay = std::chrono::microseconds(500);
  start();
  auto o = options_for(port_, 10);
  o.model = "";  // ask GET /v1/models
  o.endpoint = Endpoint::kChat;
  o.request_rate = 200.0;
  o.concurrency = 2;
  o.slo = {10'000.0, 10'000.0};
  const ServingRun run = run_serving_benchmark(o);
  EXPECT_EQ(run.label.model, "test-model");
  EXPECT_EQ(run.report.completed, 10) << format_serving_table(run.report, run.label);
  EXPECT_EQ(run.report.output_tokens, 50);
  EXPECT_EQ(run.report.good_requests, 10);  // a 10 s SLO holds on any machine
  EXPECT_GT(run.report.goodput, 0.0);
  EXPECT_GT(run.report.itl_ms.count, 0);
  expect_sane(run);
}

TEST_F(ServeBench, TokensAreTimedAsTheyArrive) {
  // The fake engine sleeps between tokens, so the gaps cannot all be ~0 unless the client only
  // looked at the stream at its end (a sanity bound of half the injected delay, not a speed check).
  engine_.token_delay = std::chrono::milliseconds(30);
  start();
  auto o = options_for(port_, 4);
  o.concurrency = 4;
  const ServingRun run = run_serving_benchmark(o);
  ASSERT_EQ(run.report.completed, 4);
  EXPECT_GE(run.report.tpot_ms.mean, 15.0);
  EXPECT_GE(run.report.itl_ms.max, 15.0);
  EXPECT_GE(run.report.e2e_ms.min - run.report.ttft_ms.min, 0.0);
}

TEST_F(ServeBench, SharedPrefixWorkloadRuns) {
  start();
  auto o = options_for(port_, 6);
  o.workload.shared_prefix_len = 40;
  o.workload.num_prefixes = 2;
  const ServingRun run = run_serving_benchmark(o);
  EXPECT_EQ(run.report.completed, 6);
  const auto requests = engine_.requests();
  ASSERT_EQ(requests.size(), 6u);
  for (const auto& q : requests) EXPECT_GE(q.prompt_ids.size(), 40u);
}

TEST_F(ServeBench, CalibratedLengthsAreTokens) {
  start();
  auto o = options_for(port_, 4);
  o.calibrate_tokens = true;
  o.workload.input_len = 60;  // tokens
  const ServingRun run = run_serving_benchmark(o);
  EXPECT_EQ(run.report.completed, 4);
  EXPECT_NE(run.label.workload.find("tokens/word"), std::string::npos) << run.label.workload;
  for (const auto& q : engine_.requests()) {  // the words' tokens vary a little around the target
    EXPECT_GE(q.prompt_ids.size(), 40u);
    EXPECT_LE(q.prompt_ids.size(), 80u);
  }
}

TEST_F(ServeBench, ApiKeyIsSentAndRejectionsAreFailures) {
  config_.api_key = "secret";
  start();
  auto o = options_for(port_, 3);
  const ServingRun rejected = run_serving_benchmark(o);
  EXPECT_EQ(rejected.report.failed, 3);
  ASSERT_EQ(rejected.report.failures.size(), 1u);
  EXPECT_EQ(rejected.report.failures.begin()->first.rfind("HTTP 401", 0), 0u) << rejected.report.failures.begin()->first;
  o.api_key = "secret";
  EXPECT_EQ(run_serving_benchmark(o).report.completed, 3);
}

TEST_F(ServeBench, ErrorsInsideTheStreamAreFailures) {
  engine_.fail_after_first_token = true;
  start();
  const ServingRun run = run_serving_benchmark(options_for(port_, 4));
  EXPECT_EQ(run.report.completed, 0);
  EXPECT_EQ(run.report.failed, 4);
  for (const auto& o : run.outcomes) EXPECT_FALSE(o.error.empty());
}

// Answers every connection with the same bytes, whatever was asked.
class CannedServer {
 public:
  explicit CannedServer(std::string response) : response_(std::move(response)), acceptor_(ioc_, {net::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~CannedServer() {
    stopping_ = true;
    boost::system::error_code ec;
    net::ip::tcp::socket poke(ioc_);
    poke.connect({net::ip::make_address("127.0.0.1"), port_}, ec);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  void serve() {
    while (true) {
      net::ip::tcp::socket socket(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (stopping_ || ec) return;
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> req;
      http::read(socket, buffer, req, ec);
      if (!ec) net::write(socket, net::buffer(response_), ec);
      socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
    }
  }
  std::string response_;
  net::io_context ioc_;
  net::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

std::string sse_response(const std::string& events) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + events;
}

ServingReport run_against(const std::string& response, int64_t n = 3) {
  CannedServer server(response);
  return run_serving_benchmark(options_for(server.port(), n)).report;
}

void expect_all_failed_with(const ServingReport& r, int64_t n, const std::string& reason) {
  EXPECT_EQ(r.completed, 0);
  EXPECT_EQ(r.failed, n);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_NE(r.failures.begin()->first.find(reason), std::string::npos) << r.failures.begin()->first;
  EXPECT_EQ(r.failures.begin()->second, n);
}

TEST(ServeBenchCanned, Http500IsAFailureWithItsBody) {
  const std::string body = R"({"error":{"message":"engine exploded","type":"server_error"}})";
  expect_all_failed_with(run_against("HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: " +
                                     std::to_string(body.size()) + "\r\n\r\n" + body),
                         3, "HTTP 500: {\"error\":{\"message\":\"engine exploded\"");
}

TEST(ServeBenchCanned, GarbageStreamsAreFailures) {
  const std::string good = R"(data: {"choices":[{"index":0,"text":"x","finish_reason":"length"}]})" "\n\n";
  const std::string usage = R"(data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}})" "\n\n";
  expect_all_failed_with(run_against(sse_response("data: garbage{{\n\ndata: [DONE]\n\n")), 3, "not a JSON object");
  expect_all_failed_with(run_against(sse_response(good + usage)), 3, "without data: [DONE]");
  expect_all_failed_with(run_against(sse_response(good + "data: [DONE]\n\n")), 3, "no usage");
  expect_all_failed_with(run_against(sse_response(good + usage + "data: [DO")), 3, "middle of an event");
  expect_all_failed_with(run_against("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"), 3,
                         "not text/event-stream");
  expect_all_failed_with(run_against("this is not HTTP\r\n\r\n"), 3, "response head");
  // The canned well-formed stream is counted, so the checks above are not vacuous.
  const ServingReport ok = run_against(sse_response(good + usage + "data: [DONE]\n\n"));
  EXPECT_EQ(ok.completed, 3);
  EXPECT_EQ(ok.output_tokens, 3);
}

TEST(ServeBenchCanned, UnanswerableQuestionsAreClearErrors) {
  CannedServer server("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops");
  auto o = options_for(server.port(), 1);
  o.calibrate_tokens = true;
  try {
    run_serving_benchmark(o);
    ADD_FAILURE() << "calibration against a 500 did not throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("POST /tokenize: HTTP 500: oops"), std::string::npos) << e.what();
  }
  o.calibrate_tokens = false;
  o.model = "";
  try {
    run_serving_benchmark(o);
    ADD_FAILURE() << "model discovery against a 500 did not throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("pass --model"), std::string::npos) << e.what();
  }
}

TEST(ServeBenchCanned, RefusedConnectionsAreFailures) {
  uint16_t port = 0;
  {
    net::io_context ioc;
    net::ip::tcp::acceptor a(ioc, {net::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }  // closed: nothing listens there now
  const ServingReport r = run_serving_benchmark(options_for(port, 2)).report;
  expect_all_failed_with(r, 2, "connect");
}

}  // namespace
}  // namespace lemma::bench::serving
