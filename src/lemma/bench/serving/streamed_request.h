// One benchmark request from send to outcome: POST the body, time the SSE payloads as they arrive,
// validate the stream (StreamValidator) and report a non-200 status, a non-SSE response or a broken
// connection as a failure with its reason. An Asio coroutine; one per request.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "lemma/bench/serving/request_body.h"
#include "lemma/bench/serving/request_outcome.h"
#include "lemma/bench/serving/target_url.h"
#include "lemma/bench/serving/workload.h"

namespace lemma::bench::serving {

struct RequestContext {
  boost::asio::ip::tcp::resolver::results_type endpoints;
  TargetUrl url;
  RequestShape shape;
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
  std::chrono::steady_clock::time_point origin;  // the benchmark's start; outcomes count from here
  std::chrono::duration<double> timeout{600.0};  // per request, whole response
  double tokens_per_word = 1.0;  // turns a prompt's word count into the input-token estimate
};

boost::asio::awaitable<RequestOutcome> send_streamed_request(const RequestContext& context, const WorkItem& item);

// Headers every request carries (Authorization when an API key is set).
std::map<std::string, std::string> request_headers(const std::string& api_key);

}  // namespace lemma::bench::serving
