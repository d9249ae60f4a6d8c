#include "lemma/bench/serving/server_queries.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/bench/serving/http_exchange.h"
#include "lemma/bench/serving/workload.h"

namespace lemma::bench::serving {

namespace net = boost::asio;

namespace {
constexpr auto kQueryTimeout = std::chrono::seconds(60);
constexpr int64_t kCalibrationWords = 2000;

struct Answer {
  nlohmann::json json;  // discarded when the body is not JSON
  std::string problem;  // "" when the server answered 200 with JSON
};

Answer query(net::io_context& ioc, const RequestContext& context, const std::string& method, const std::string& route,
             const std::string& body) {
  HttpCall call;
  call.method = method;
  call.target = context.url.target(route);
  call.host_header = context.url.host_header();
  call.body = body;
  call.headers = request_headers(context.api_key);
  int status = 0;
  std::string text, error;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        error = co_await http_exchange(
            context.endpoints, call, std::chrono::steady_clock::now() + kQueryTimeout,
            [&](const HttpHead& h) { status = h.status; }, [&](std::string_view bytes) { text.append(bytes); });
      },
      net::detached);
  ioc.run();
  ioc.restart();
  Answer a;
  a.json = nlohmann::json::parse(text, nullptr, false);
  if (!error.empty()) {
    a.problem = error;
  } else if (status != 200 || a.json.is_discarded()) {
    a.problem = "HTTP " + std::to_string(status) + ": " + text.substr(0, 200);
  }
  a.problem = a.problem.empty() ? "" : method + " " + call.target + ": " + a.problem;
  return a;
}
}  // namespace

std::string discover_model(net::io_context& ioc, const RequestContext& context) {
  const Answer a = query(ioc, context, "GET", "/v1/models", "");
  const nlohmann::json& j = a.json;
  if (a.problem.empty() && j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string()) {
    return j["data"][0]["id"].get<std::string>();
  }
  throw InvalidArgument("could not read the model name (" + (a.problem.empty() ? "no data[0].id in the list" : a.problem) +
                        "); pass --model");
}

double measure_tokens_per_word(net::io_context& ioc, const RequestContext& context) {
  const std::string sample = seeded_words(kCalibrationWords, 0x70c3);
  const nlohmann::json body = {
      {"model", context.shape.model}, {"prompt", sample}, {"content", sample}, {"add_special_tokens", false}};
  const Answer a = query(ioc, context, "POST", "/tokenize", body.dump());
  const nlohmann::json& j = a.json;
  if (a.problem.empty() && j.is_object() && j.contains("tokens") && j["tokens"].is_array() && !j["tokens"].empty()) {
    return static_cast<double>(j["tokens"].size()) / static_cast<double>(kCalibrationWords);
  }
  throw InvalidArgument("--calibrate-tokens could not tokenize a sample (" +
                        (a.problem.empty() ? "no \"tokens\" array in the answer" : a.problem) + ")");
}

}  // namespace lemma::bench::serving
