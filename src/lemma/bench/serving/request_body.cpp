#include "lemma/bench/serving/request_body.h"

#include <nlohmann/json.hpp>

namespace lemma::bench::serving {

std::string request_body(const RequestShape& shape, const std::string& prompt, int64_t max_tokens) {
  nlohmann::json body = {{"model", shape.model}, {"max_tokens", max_tokens}, {"stream", true}, {"temperature", 0.0}};
  if (shape.endpoint == Endpoint::kChat) {
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
  } else {
    body["prompt"] = prompt;
  }
  if (shape.include_usage) body["stream_options"] = {{"include_usage", true}};
  if (shape.ignore_eos) body["ignore_eos"] = true;
  if (!shape.extra_body.empty()) body.update(nlohmann::json::parse(shape.extra_body));
  return body.dump();
}

const char* endpoint_route(Endpoint endpoint) {
  return endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

const char* endpoint_name(Endpoint endpoint) { return endpoint == Endpoint::kChat ? "chat" : "completions"; }

}  // namespace lemma::bench::serving
