#include "lemma/bench/serving/load_runner.h"

#include <algorithm>
#include <cmath>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "lemma/base/error.h"
#include "lemma/bench/serving/arrival.h"
#include "lemma/bench/serving/server_queries.h"
#include "lemma/bench/serving/streamed_request.h"

namespace lemma::bench::serving {

namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {
constexpr auto kProgressEvery = std::chrono::seconds(1);

std::string describe_workload(const WorkloadSpec& w, double tokens_per_word) {
  std::string s = fmt::format("{} prompts, input {} words, output {} tokens", w.num_prompts, w.input_len, w.output_len);
  if (tokens_per_word > 0) s += fmt::format(" (calibrated: {:.3f} tokens/word)", tokens_per_word);
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
  if (!(options.request_timeout_s > 0)) throw InvalidArgument("--timeout-s must be > 0");
  check_workload(options.workload);
  const TargetUrl url = parse_target_url(options.url);
  net::io_context ioc;
  RequestContext context;
  context.url = url;
  net::ip::tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  context.endpoints = resolver.resolve(url.host, url.port, ec);
  if (ec) throw InvalidArgument("cannot resolve " + url.host + ": " + ec.message());
  context.api_key = options.api_key;
  context.timeout = std::chrono::duration<double>(options.request_timeout_s);
  context.shape = {options.endpoint, options.model, options.include_usage, options.ignore_eos, options.extra_body};
  if (context.shape.model.empty()) context.shape.model = discover_model(ioc, context);

  WorkloadSpec workload = options.workload;
  double tokens_per_word = 0.0;  // 0 = lengths are in words
  if (options.calibrate_tokens) {
    tokens_per_word = measure_tokens_per_word(ioc, context);
    const auto words_for = [&](int64_t tokens) {
      return tokens == 0 ? 0 : std::max<int64_t>(1, std::llround(static_cast<double>(tokens) / tokens_per_word));
    };
    workload.input_len = words_for(workload.input_len);
    workload.shared_prefix_len = words_for(workload.shared_prefix_len);
    context.tokens_per_word = tokens_per_word;
  }
  const std::vector<WorkItem> items = make_workload(workload);
  const std::vector<double> offsets = arrival_offsets(static_cast<int64_t>(items.size()), options.request_rate, workload.seed);

  ServingRun run;
  run.label = {options.url, context.shape.model, endpoint_name(options.endpoint), describe_workload(workload, tokens_per_word),
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
