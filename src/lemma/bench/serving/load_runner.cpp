#include "lemma/bench/serving/load_runner.h"

#include <cmath>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/bench/serving/arrival.h"
#include "lemma/bench/serving/http_exchange.h"
#include "lemma/bench/serving/streamed_request.h"

namespace lemma::bench::serving {

namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {
constexpr auto kProgressEvery = std::chrono::seconds(1);

// The first model id of GET /v1/models, for servers (vLLM) that insist on a model name.
std::string discover_model(net::io_context& ioc, const RequestContext& context) {
  HttpCall call;
  call.method = "GET";
  call.target = context.url.target("/v1/models");
  call.host_header = context.url.host_header();
  call.headers = request_headers(context.api_key);
  int status = 0;
  std::string body, error;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        error = co_await http_exchange(
            context.endpoints, call, Clock::now() + std::chrono::seconds(30), [&](const HttpHead& h) { status = h.status; },
            [&](std::string_view bytes) { body.append(bytes); });
      },
      net::detached);
  ioc.run();
  ioc.restart();
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (error.empty() && status == 200 && j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string()) {
    return j["data"][0]["id"].get<std::string>();
  }
  const std::string why = !error.empty() ? error : "HTTP " + std::to_string(status) + ": " + body.substr(0, 200);
  throw InvalidArgument("could not read the model name from GET " + call.target + " (" + why + "); pass --model");
}

std::string describe_workload(const WorkloadSpec& w) {
  std::string s = fmt::format("{} prompts, input {} words, output {} tokens", w.num_prompts, w.input_len, w.output_len);
  if (w.range_ratio > 0) s += fmt::format(" (each +/- {:g}%)", w.range_ratio * 100.0);
  if (w.shared_prefix_len > 0) {
    s += fmt::format(", {:g}% share one of {} prefixes of {} words", w.shared_prefix_fraction * 100.0, w.num_prefixes,
                     w.shared_prefix_len);
  }
  return s + fmt::format(", seed {}", w.seed);
}

std::string describe_arrivals(const ServingBenchOptions& o) {
  std::string s = std::isinf(o.request_rate) ? "burst (all at once)" : fmt::format("Poisson at {:g} requests/s", o.request_rate);
  return s + (o.concurrency > 0 ? fmt::format(", at most {} in flight", o.concurrency) : ", no concurrency limit");
}

struct RunState {
  std::vector<RequestOutcome> outcomes;
  int64_t completed = 0, failed = 0, in_flight = 0, finished = 0;
  Clock::time_point last_end;
};
}  // namespace

ServingRun run_serving_benchmark(const ServingBenchOptions& options, const ProgressFn& progress) {
  if (options.concurrency < 0) throw InvalidArgument("--concurrency must be >= 0 (0 = no limit)");
  if (!(options.request_timeout_s > 0)) throw InvalidArgument("the request timeout must be > 0");
  const std::vector<WorkItem> items = make_workload(options.workload);
  const std::vector<double> offsets = arrival_offsets(static_cast<int64_t>(items.size()), options.request_rate, options.workload.seed);

  net::io_context ioc;
  RequestContext context;
  context.url = parse_target_url(options.url);
  net::ip::tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  context.endpoints = resolver.resolve(context.url.host, context.url.port, ec);
  if (ec) throw InvalidArgument("cannot resolve " + context.url.host + ": " + ec.message());
  context.api_key = options.api_key;
  context.timeout = std::chrono::duration<double>(options.request_timeout_s);
  context.shape = {options.endpoint, options.model, options.include_usage, options.ignore_eos};
  if (context.shape.model.empty()) context.shape.model = discover_model(ioc, context);

  ServingRun run;
  run.label = {options.url, context.shape.model, endpoint_name(options.endpoint), describe_workload(options.workload),
               describe_arrivals(options)};
  RunState state;
  state.outcomes.resize(items.size());
  const auto total = static_cast<int64_t>(items.size());
  net::steady_timer slot_freed(ioc);  // cancelled whenever a request finishes
  net::steady_timer tick(ioc);        // the progress reporter's; cancelled when the last one finishes
  context.origin = Clock::now();
  state.last_end = context.origin;
  const auto report_progress = [&] {
    if (progress) {
      progress({state.completed, state.failed, state.in_flight, total,
                std::chrono::duration<double>(Clock::now() - context.origin).count()});
    }
  };

  auto one_request = [&](size_t i) -> net::awaitable<void> {
    state.outcomes[i] = co_await send_streamed_request(context, items[i]);
    ++(state.outcomes[i].ok ? state.completed : state.failed);
    --state.in_flight;
    ++state.finished;
    state.last_end = Clock::now();
    slot_freed.cancel();
    if (state.finished == total) tick.cancel();
  };
  auto dispatcher = [&]() -> net::awaitable<void> {
    net::steady_timer wait(ioc);
    boost::system::error_code ignored;
    for (size_t i = 0; i < items.size(); ++i) {
      wait.expires_at(context.origin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offsets[i])));
      co_await wait.async_wait(net::redirect_error(net::use_awaitable, ignored));
      while (options.concurrency > 0 && state.in_flight >= options.concurrency) {
        slot_freed.expires_at(Clock::time_point::max());
        co_await slot_freed.async_wait(net::redirect_error(net::use_awaitable, ignored));
      }
      ++state.in_flight;
      net::co_spawn(ioc, one_request(i), net::detached);
    }
  };
  auto reporter = [&]() -> net::awaitable<void> {
    boost::system::error_code ignored;
    while (state.finished < total) {
      tick.expires_after(kProgressEvery);
      co_await tick.async_wait(net::redirect_error(net::use_awaitable, ignored));
      if (state.finished < total) report_progress();  // the final one follows ioc.run()
    }
  };
  net::co_spawn(ioc, dispatcher(), net::detached);
  net::co_spawn(ioc, reporter(), net::detached);
  ioc.run();
  report_progress();

  const double duration = std::chrono::duration<double>(state.last_end - context.origin).count();
  run.report = make_serving_report(state.outcomes, duration, options.slo);
  run.outcomes = std::move(state.outcomes);
  return run;
}

}  // namespace lemma::bench::serving
